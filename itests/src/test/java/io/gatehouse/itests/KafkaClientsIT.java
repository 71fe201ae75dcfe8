package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.ops4j.pax.exam.CoreOptions.bundle;
import static org.ops4j.pax.exam.CoreOptions.composite;
import static org.ops4j.pax.exam.CoreOptions.options;
import static org.ops4j.pax.exam.CoreOptions.systemPackages;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.gatehouse.kafka.link.Connectivity;
import io.gatehouse.kafka.link.KafkaLink;
import io.gatehouse.kafka.link.SendResult;
import io.gatehouse.testkit.kafka.KafkaBroker;
import io.gatehouse.testkit.kafka.KafkaRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.framework.Bundle;
import org.osgi.framework.wiring.BundleWire;
import org.osgi.framework.wiring.BundleWiring;
import org.osgi.framework.namespace.PackageNamespace;

/**
 * The wrapped kafka-clients bundle resolves and starts in Felix 7.0.5 with its compression bundles and slf4j 1.7.36,
 * and produces from inside the framework to a real broker (testkit-kafka, a child JVM on 127.0.0.1) with every
 * compression type. The broker harness runs in the failsafe JVM's class loader and reaches the probe as a system
 * package, so its own Kafka classes never meet the bundle's.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class KafkaClientsIT extends ITSupport {
    static final String WRAPPER = GROUP + ".kafka-clients";
    static final List<String> COMPRESSIONS = List.of("none", "gzip", "snappy", "lz4", "zstd");

    @Configuration
    public Option[] config() {
        return options(base(), kafkaBundles(), systemPackages("io.gatehouse.testkit.kafka"));
    }

    /**
     * The wrapper and kafka-link from target/kafka-bundles (kafka-link is a bundle only here: C_KAFKA embeds it);
     * the compression libraries whose packages the wrapper imports are in {@link #base()}.
     */
    public static Option kafkaBundles() {
        File dir = new File(bundlesDir().getParentFile(), "kafka-bundles");
        return composite(
            bundle(new File(dir, WRAPPER + ".jar").toURI().toString()),
            bundle(new File(dir, GROUP + ".kafka-link.jar").toURI().toString()));
    }

    @Test
    public void shouldStartTheWrapperAndWireItToSlf4jAndTheCompressionBundles() {
        for (String bsn : List.of(WRAPPER, GROUP + ".kafka-link", "com.github.luben.zstd-jni", "lz4-java",
            "org.xerial.snappy.snappy-java")) {
            Bundle b = installedBundle(bsn);
            assertNotNull(bsn + " installed", b);
            assertEquals(bsn + " state", "ACTIVE", stateName(b));
        }
        Bundle wrapper = installedBundle(WRAPPER);
        assertEquals("4.4.0", wrapper.getVersion().toString());
        Map<String, String> providers = new HashMap<>();
        Map<String, String> versions = new HashMap<>();
        for (BundleWire w : wrapper.adapt(BundleWiring.class).getRequiredWires(PackageNamespace.PACKAGE_NAMESPACE)) {
            Map<String, Object> attrs = w.getCapability().getAttributes();
            String pkg = (String) attrs.get(PackageNamespace.PACKAGE_NAMESPACE);
            Bundle provider = w.getProviderWiring().getBundle();
            providers.put(pkg, provider.getSymbolicName() + " " + provider.getVersion());
            versions.put(pkg, String.valueOf(attrs.get(PackageNamespace.CAPABILITY_VERSION_ATTRIBUTE)));
        }
        // Here slf4j's packages come from pax-logging-api (Pax Exam's link-assembly brings it, and it exports the
        // 1.7 API as Karaf does); in runtime/felix they come from slf4j-api 1.7.36 itself.
        System.out.println("org.slf4j " + versions.get("org.slf4j") + " from " + providers.get("org.slf4j"));
        assertEquals("1.7.36", versions.get("org.slf4j"));
        assertEquals("com.github.luben.zstd-jni 1.5.7.17", providers.get("com.github.luben.zstd"));
        assertEquals("lz4-java 1.11.2", providers.get("net.jpountz.lz4"));
        assertEquals("org.xerial.snappy.snappy-java 1.1.10.7", providers.get("org.xerial.snappy"));
    }

    @Test
    public void shouldProduceWithEveryCompressionFromInsideTheFramework() throws Exception {
        KafkaBroker broker = KafkaBroker.start(newTestDir("kafka"));
        ExecutorService loop = Executors.newSingleThreadExecutor(r -> new Thread(r, "core-loop"));
        Thread self = Thread.currentThread();
        ClassLoader tccl = self.getContextClassLoader();
        try {
            for (String compression : COMPRESSIONS) {
                broker.createTopic("raw-" + compression, 1);
                broker.createTopic("link-" + compression, 1);
            }

            // 1. The trap: Kafka loads classes named in its config through the thread context class loader. The
            //    failsafe JVM's class loader has Kafka classes of its own, so a serializer named there is not a
            //    Serializer of the bundle's class space.
            self.setContextClassLoader(ClassLoader.getSystemClassLoader());
            try {
                new KafkaProducer<String, String>(byName(broker, "none")).close();
                fail("a producer configured by class name under a foreign context class loader was built");
            } catch (KafkaException expected) {
                System.out.println("by name under the failsafe class loader: " + expected + ", caused by "
                    + expected.getCause());
            }

            // 2. No context class loader (a bare framework thread): Kafka falls back to its bundle's loader,
            //    which loads the serializers and, through its imports, the compression codecs.
            self.setContextClassLoader(null);
            for (String compression : COMPRESSIONS) {
                try (KafkaProducer<String, String> p = new KafkaProducer<>(byName(broker, compression))) {
                    ProducerRecord<String, String> r = new ProducerRecord<>("raw-" + compression, "k", "v-" + compression);
                    r.headers().add("gh-msg-id", ("raw/" + compression).getBytes(StandardCharsets.UTF_8));
                    RecordMetadata md = p.send(r).get(30, TimeUnit.SECONDS);
                    assertEquals(0, md.offset());
                }
                List<KafkaRecord> got = broker.consumeAll("raw-" + compression, Duration.ofSeconds(20));
                assertEquals(1, got.size());
                assertEquals("v-" + compression, got.get(0).valueString());
                assertEquals("raw/" + compression, got.get(0).header("gh-msg-id"));
            }

            // 3. KafkaLink sets Kafka's own loader while it builds the producer, so the foreign context class loader
            //    of step 1 does not matter to it.
            self.setContextClassLoader(ClassLoader.getSystemClassLoader());
            for (String compression : COMPRESSIONS) {
                LinkedBlockingQueue<Connectivity> reports = new LinkedBlockingQueue<>();
                LinkedBlockingQueue<SendResult> results = new LinkedBlockingQueue<>();
                List<String> offLoop = new ArrayList<>();
                try (KafkaLink link = KafkaLink.builder(broker.bootstrapServers(), "link-" + compression, loop)
                         .compression(compression).connectivityInterval(Duration.ofMillis(200))
                         .listener(reports::add).open()) {
                    Connectivity c = reports.poll(20, TimeUnit.SECONDS);
                    assertNotNull("a connectivity report", c);
                    assertTrue(c.toString(), c.up());
                    for (int i = 0; i < 100; i++) {
                        Map<String, byte[]> h = Map.of("gh-msg-id", ("link/" + i).getBytes(StandardCharsets.UTF_8));
                        assertEquals(KafkaLink.Offer.ACCEPTED, link.send(("dev-" + (i % 7)).getBytes(StandardCharsets.UTF_8),
                            ("m" + i).getBytes(StandardCharsets.UTF_8), h, r -> {
                                if (!"core-loop".equals(Thread.currentThread().getName())) {
                                    offLoop.add(Thread.currentThread().getName());
                                }
                                results.add(r);
                            }));
                    }
                    for (int i = 0; i < 100; i++) {
                        SendResult r = results.poll(30, TimeUnit.SECONDS);
                        assertNotNull(compression + ": callback " + i, r);
                        assertTrue(compression + ": " + r.error(), r.ok());
                    }
                }
                assertTrue("callbacks off the loop: " + offLoop, offLoop.isEmpty());
                List<KafkaRecord> got = broker.consumeAll("link-" + compression, Duration.ofSeconds(20));
                assertEquals(100, got.size());
                for (int i = 0; i < 100; i++) {
                    assertEquals("m" + i, got.get(i).valueString());
                    assertEquals("link/" + i, got.get(i).header("gh-msg-id"));
                }
            }
        } finally {
            self.setContextClassLoader(tccl);
            loop.shutdownNow();
            broker.close();
        }
    }

    /** A producer config that names its serializers by class, as a config file or Config Admin would. */
    static Properties byName(KafkaBroker broker, String compression) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.StringSerializer");
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "org.apache.kafka.common.serialization.StringSerializer");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        return p;
    }
}
