/**
 * KafkaLink: the producer side of C_KAFKA without the gobj part. Exported so that the Pax Exam probe can drive it
 * inside the framework; the C_KAFKA gclass bundle takes this package in as a private copy (bnd
 * {@code -conditionalpackage} / {@code Private-Package}), so that in a container only {@code api} exports Gatehouse
 * packages and an upgrade of C_KAFKA carries its own KafkaLink.
 */
@Export
@Version("0.1.0")
package io.gatehouse.kafka.link;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
