// SPDX-License-Identifier: Apache-2.0
/** C_PROT_MQTT / C_PROT_MQTT2: the server side of MQTT 3.1.1 and 5.0, an ingest acking only durable messages. Not exported. */
package io.gatehouse.mqtt;
