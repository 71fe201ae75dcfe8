package io.gatehouse.kafka.link;

import org.apache.kafka.common.errors.RetriableException;

/**
 * How one send ended: acknowledged by the in-sync replicas ({@code error == null}, with partition and offset), or
 * failed. {@code latencyNanos} runs from {@link KafkaLink#send} to the producer's callback.
 */
public record SendResult(int partition, long offset, Exception error, long latencyNanos) {

    public boolean ok() {
        return error == null;
    }

    /**
     * True if Kafka classes the failure as transient (a timeout, no leader, not enough replicas): sending the same
     * record again later can succeed. False for failures that a resend will meet again (authorization, a record
     * too large, a bad configuration), which an operator has to fix.
     */
    public boolean retriable() {
        return error instanceof RetriableException;
    }

    static SendResult acked(int partition, long offset, long latencyNanos) {
        return new SendResult(partition, offset, null, latencyNanos);
    }

    static SendResult failed(Exception error, long latencyNanos) {
        return new SendResult(-1, -1, error, latencyNanos);
    }
}
