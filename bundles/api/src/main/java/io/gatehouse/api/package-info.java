// SPDX-License-Identifier: Apache-2.0
/**
 * The Gatehouse object model: gclasses, gobjs, events, states, the FSM, kw, attributes, commands and stats.
 * The only package every gclass bundle imports: the contract, and nothing else.
 *
 * <p>2.0.0 (major, after 1.2.0): the implementation helpers {@code Glog} (with its static sinks and
 * {@code LogSink}), {@code InputGates}, {@code InputThreshold}, {@code RateWindow} and {@code Gbuffers} left this
 * package for {@code io.gatehouse.support}, which is not exported: every bundle embeds its own copy, so a fix in one
 * of them is a release of the bundles that use it (upgraded live), not of the api (which every bundle is wired to).
 * {@code GObjBehavior.msgs()}, added in 1.2.0, is gone again (rate windows read the gclass's counter attributes).
 * Removing types and methods is a major change: importers get the range {@code [2.0,3)} from bnd when they are
 * rebuilt, and a bundle built against 1.x does not resolve against this api.
 *
 * <p>2.1.0 (minor): {@code GClassSpec.takesJsonRecords()} and {@code Kw.JSON_RECORD}, added: a durable output
 * declares that it stores a message handed as its record's bytes (the producer's, from C_RELAY) as it stores the
 * dict; a bundle built against 2.0 still resolves, one built against 2.1 imports {@code [2.1,3)}.
 *
 * <p>2.2.0 (minor): {@code GClassSpec.answersDurableTokens()}, {@code Ev.EV_ON_DURABLE_TOKENS},
 * {@code Kw.DURABLE_TOKEN}, {@code Kw.TOKENS} and {@code Kw.COUNT}, added: a durable output tells a sender every
 * message one commit made durable in one event, by the numbers the sender gave them, instead of one event and one
 * dict per message.
 *
 * <p>2.3.0 (minor): {@code GClassSpec.takesQueueRecords()}, {@code Kw.QUEUE_MESSAGE} and {@code Kw.QUEUE_ACKS},
 * added: an output below a queue's gate (C_KAFKA) takes a queued message as its stored bytes and its queue handle,
 * instead of the JSON with {@code __md_trq__} written into it and read back, and answers a burst of them by their
 * numbers in one event.
 *
 * <p>2.4.0 (minor): {@code GClassSpec.takesBatches()}, {@code Kw.BATCH}, {@code Kw.BATCH_INDEX} and
 * {@code Kw.messages} added: a producer (C_PROT_HTTP_SR) sends the objects of one request up in one event, and the
 * relay answers them with one ack, instead of an event and an ack per object.
 *
 * <p>2.5.0 (minor): {@code GClassSpec.takesSendBatches()} added: a queue's gate sends what one pass takes from its
 * queue down as one event, which the gate, the channel and the protocol below pass or frame whole, instead of an
 * event through every level per message.
 *
 * <p>2.6.0 (minor): {@code GClassSpec.takesMessageBatches()} and {@code Kw.MESSAGES} added: a protocol sends the
 * messages one read completed up as one event, which the channel and the gate pass whole and the relay or the queue's
 * gate takes message by message, instead of an event through every level per message.
 *
 * <p>2.7.0 (minor): {@code Kw.RECORD_FIELDS} and {@code Kw.BATCH_RECORDS} added: a record's top-level members
 * indexed by the gclass that wrote it (C_RELAY), so that the gclasses under it (C_MQIOGATE's routing key, the
 * queue's time key) find a field without walking the record's bytes again; and the objects of a batch that are
 * already records, marked by the producer that checked them (C_PROT_HTTP_SR), so that C_RELAY does not walk them.
 */
@Export
@Version("2.7.0")
package io.gatehouse.api;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
