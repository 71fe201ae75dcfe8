// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

import org.osgi.annotation.versioning.ProviderType;

import java.nio.file.Path;

/**
 * Opens persistent queues (Yuneta's trq_open). Published by the trqueue bundle as a service; the same
 * implementation can be created with plain {@code new} outside OSGi.
 */
@ProviderType
public interface TrQueueFactory {

    /**
     * Opens (creating it when missing) the queue topic {@code <trangerPath>/<database>/<topicName>/} and recovers
     * its files: a torn tail is truncated, a corrupt segment set aside. Nothing is loaded: call
     * {@link TrQueue#load()}.
     *
     * @param database         the database directory; empty uses the last segment of {@code trangerPath}
     * @param tkey             field of each message holding its message time ({@code tm}); "" for none
     * @param systemFlag       timeranger system flags; the key type is forced to {@code sf_rowid_key}
     * @param backupQueueSize  topic size that makes {@link TrQueue#checkBackup()} back it up; 0 keeps the saved value
     * @throws TrQueueException when the topic is locked by another process or cannot be opened
     */
    TrQueue open(Path trangerPath, String database, String topicName, String tkey, int systemFlag,
                 long backupQueueSize, TrQueueOptions options);

    /** {@link #open(Path, String, String, String, int, long, TrQueueOptions)} with default options. */
    default TrQueue open(Path trangerPath, String database, String topicName, String tkey, int systemFlag,
                         long backupQueueSize) {
        return open(trangerPath, database, topicName, tkey, systemFlag, backupQueueSize, TrQueueOptions.defaults());
    }
}
