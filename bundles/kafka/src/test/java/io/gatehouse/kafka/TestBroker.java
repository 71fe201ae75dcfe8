// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import io.gatehouse.testkit.kafka.KafkaBroker;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * One real broker (testkit-kafka, a child JVM on 127.0.0.1) for every test class of this module, started by the
 * first that asks and stopped when the test JVM exits (the child also watches its parent). Besides the plain
 * listener, a SASL/PLAIN listener knows one user, {@value #USER}, and the broker authorises with Kafka's
 * StandardAuthorizer: the plain listener's ANONYMOUS is a super user (the tests, the broker and its controller), and
 * {@value #USER} may do everything on the topic {@value #SASL_TOPIC} and only describe {@value #ACL_TOPIC}.
 */
final class TestBroker {
    static final String USER = "edge";
    static final String PASSWORD = "s3cret";
    /** {@value #USER} may write here (which also lets its idempotent producer get an id). */
    static final String SASL_TOPIC = "sasl";
    /** {@value #USER} may only describe this topic: its records are refused as not authorised. */
    static final String ACL_TOPIC = "acl";

    private static KafkaBroker broker;

    private TestBroker() {}

    /** The broker, running (started again if a test stopped it and failed before starting it). */
    static synchronized KafkaBroker get() throws Exception {
        if (broker == null) {
            Path root = Files.createDirectories(Path.of(System.getProperty("gatehouse.testkit.dir", "target/kafka-tests")));
            broker = KafkaBroker.builder(Files.createTempDirectory(root, "broker-")).saslPlain(USER, PASSWORD)
                    .property("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
                    .property("super.users", "User:ANONYMOUS")
                    .start();
            System.out.println("broker started in " + broker.lastStartTime().toMillis() + " ms");
            KafkaBroker b = broker;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> {
                try {
                    b.close();
                } catch (Exception e) {
                    System.err.println("broker not closed: " + e);
                }
            }));
            allow(AclOperation.ALL, SASL_TOPIC);
            allow(AclOperation.DESCRIBE, ACL_TOPIC);
        } else if (!broker.isRunning()) {
            broker.restart();
        }
        return broker;
    }

    /** Lets {@value #USER} do {@code op} on {@code topic}. */
    static void allow(AclOperation op, String topic) throws Exception {
        try (Admin admin = broker.admin(Map.of())) {
            admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                    new AccessControlEntry("User:" + USER, "*", op, AclPermissionType.ALLOW)))).all()
                    .get(30, TimeUnit.SECONDS);
        }
    }
}
