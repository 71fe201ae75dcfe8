// SPDX-License-Identifier: Apache-2.0
/** C_KAFKA: an output that produces queued records to a Kafka topic and acks the queue once Kafka has them. Not exported. */
package io.gatehouse.kafka;
