/**
 * KafkaLink: the producer side of C_KAFKA without the gobj part. No package annotation exports it: the C_KAFKA
 * gclass bundle takes this package in as a private copy (bnd {@code -conditionalpackage}), and an {@code @Export}
 * here would travel with the copy and make bnd export it from C_KAFKA too, so that in a container only {@code api}
 * exports Gatehouse packages and an upgrade of C_KAFKA carries its own KafkaLink. The kafka-link jar itself exports
 * it through its own bnd instruction, for the Pax Exam probe of KafkaClientsIT only (never installed elsewhere).
 */
package io.gatehouse.kafka.link;
