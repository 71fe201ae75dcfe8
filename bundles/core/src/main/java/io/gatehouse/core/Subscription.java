package io.gatehouse.core;

import io.gatehouse.api.GObj;

/** One subscriber of a publisher: to one event, or to every output event when {@code event} is null. */
final class Subscription {
    final String event;
    final GObj subscriber;

    Subscription(String event, GObj subscriber) {
        this.event = event;
        this.subscriber = subscriber;
    }

    boolean matches(String ev) {
        return event == null || event.equals(ev);
    }
}
