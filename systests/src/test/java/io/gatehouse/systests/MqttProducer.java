package io.gatehouse.systests;

import org.eclipse.paho.client.mqttv3.IMqttActionListener;
import org.eclipse.paho.client.mqttv3.IMqttToken;
import org.eclipse.paho.client.mqttv3.MqttAsyncClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.MqttMessage;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;

import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * An MQTT producer for the reliability scenarios: Eclipse Paho (3.1.1, persistent session, automatic reconnect,
 * resend of what was not acked) publishing {@code {"id":"msg-N"}} for N in {@code [from, from+count)} at one
 * QoS, at most {@code window} in flight. An id counts as acked when Paho reports the delivery complete: PUBACK
 * for QoS 1, PUBCOMP (after PUBREC) for QoS 2.
 */
final class MqttProducer {
    private final String url;
    private final String clientId;
    private final int qos;
    private final long from;
    private final int count;
    int window = 500;
    private final BitSet acked = new BitSet();
    private long ackedCount;
    long notConnectedRetries;

    MqttProducer(int port, String clientId, int qos, long from, int count) {
        this.url = "tcp://127.0.0.1:" + port;
        this.clientId = clientId;
        this.qos = qos;
        this.from = from;
        this.count = count;
    }

    /** Publishes everything and waits until every id is acked or {@code timeoutMs} passed; true when all were. */
    boolean run(long timeoutMs) throws MqttException, InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        MqttAsyncClient c = new MqttAsyncClient(url, clientId, new MemoryPersistence());
        MqttConnectOptions o = new MqttConnectOptions();
        o.setMqttVersion(MqttConnectOptions.MQTT_VERSION_3_1_1);
        o.setCleanSession(false);
        o.setAutomaticReconnect(true);
        o.setMaxReconnectDelay(1000);
        o.setMaxInflight(window);
        o.setKeepAliveInterval(30);
        o.setConnectionTimeout(30);
        Semaphore inFlight = new Semaphore(window);
        try {
            connect(c, o, deadline);
            for (long id = from; id < from + count; id++) {
                if (!inFlight.tryAcquire(Math.max(1, deadline - System.currentTimeMillis()), TimeUnit.MILLISECONDS)) return false;
                MqttMessage m = new MqttMessage(("{\"id\":\"msg-" + id + "\",\"pad\":\"" + "x".repeat(64) + "\"}")
                        .getBytes(StandardCharsets.US_ASCII));
                m.setQos(qos);
                final long n = id;
                IMqttActionListener done = new IMqttActionListener() {
                    @Override public void onSuccess(IMqttToken t) {
                        synchronized (acked) {
                            if (!acked.get((int) n)) ackedCount++;
                            acked.set((int) n);
                        }
                        inFlight.release();
                    }

                    @Override public void onFailure(IMqttToken t, Throwable e) {
                        inFlight.release();
                    }
                };
                for (;;) {
                    try {
                        c.publish("devices/" + (id % 100), m, null, done);
                        break;
                    } catch (MqttException e) {
                        // disconnected (the gateway was killed): wait for the automatic reconnect, then go on
                        notConnectedRetries++;
                        if (System.currentTimeMillis() > deadline) return false;
                        Thread.sleep(50);
                    }
                }
            }
            while (ackedCount() < count && System.currentTimeMillis() < deadline) Thread.sleep(50);
            return ackedCount() == count;
        } finally {
            try {
                if (c.isConnected()) c.disconnect().waitForCompletion(5000);
            } catch (MqttException ignored) {
                // closing anyway
            }
            c.close(true);
        }
    }

    private static void connect(MqttAsyncClient c, MqttConnectOptions o, long deadline) throws InterruptedException, MqttException {
        for (;;) {
            try {
                c.connect(o).waitForCompletion(35_000);
                return;
            } catch (MqttException e) {
                if (System.currentTimeMillis() > deadline) throw e;
                Thread.sleep(200);
            }
        }
    }

    long ackedCount() {
        synchronized (acked) {
            return ackedCount;
        }
    }

    BitSet ackedIds() {
        synchronized (acked) {
            return (BitSet) acked.clone();
        }
    }
}
