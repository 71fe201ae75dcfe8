package io.gatehouse.kafka.link;

/**
 * What the link last saw of the cluster: {@code up} when a broker answered within the check timeout and the
 * producer holds the topic's partitions (records can be sent now); otherwise {@code detail} says why not, in words
 * meant for an operator (unreachable bootstrap servers, failed authentication, unknown topic).
 */
public record Connectivity(boolean up, String detail, int brokers, int partitions) {

    static Connectivity up(int brokers, int partitions) {
        return new Connectivity(true, "connected: " + brokers + " broker(s), " + partitions + " partition(s)",
            brokers, partitions);
    }

    static Connectivity down(String detail) {
        return new Connectivity(false, detail, 0, 0);
    }

    /** Same state as far as a listener cares: up/down and, when down, the same reason. */
    boolean sameAs(Connectivity o) {
        return o != null && up == o.up && (up || detail.equals(o.detail));
    }
}
