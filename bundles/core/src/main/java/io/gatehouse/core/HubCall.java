package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A blocking command to another hub, for callers off the core thread (the Gogo shell, embedders): for the time of
 * the call a short-lived hub {@code <this hub>~shell-N} is linked in the registry, the command travels as a
 * {@code cmd} message through the portals and the reply's envelope is answered.
 */
public final class HubCall {
    private static final AtomicLong SEQ = new AtomicLong();

    private HubCall() {}

    /** Runs {@code line} on yuno {@code hub} (this one when empty or its own name); waits at most {@code timeoutMs}. */
    public static ObjectNode command(YunoRuntime rt, String hub, String line, long timeoutMs) {
        if (hub == null || hub.isEmpty() || hub.equals(rt.yuno().name())) return rt.command(line);
        if (rt.yuno().inCoreThread()) return Envelope.error("HubCall cannot wait on the core thread");
        Registry reg = rt.yuno().lookup(Registry.class);
        String me = rt.yuno().name() + "~shell-" + SEQ.incrementAndGet();
        CompletableFuture<ObjectNode> answer = new CompletableFuture<>();
        Registry.Link link = new Registry.Link() {
            @Override public String describe() { return "shell " + me; }
            @Override public boolean isOpen() { return !answer.isDone(); }

            @Override
            public boolean send(ObjectNode msg) {
                JsonNode env = msg.get("reply");
                answer.complete(env instanceof ObjectNode ? (ObjectNode) env : Envelope.error("answer without envelope: " + msg));
                return true;
            }
        };
        ObjectNode msg = Kw.create();
        ObjectNode to = msg.putObject("to");
        to.put("hub", hub);
        to.put("service", Registry.YUNO);
        msg.putObject("from").put("hub", me);
        msg.put("type", "cmd");
        msg.put("command", line);
        msg.put("id", 1);
        rt.run(() -> {
            reg.addLink(me, link);
            reg.deliver(msg);
        });
        try {
            return answer.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return Envelope.error("no answer from hub '" + hub + "' within " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Envelope.error("interrupted");
        } catch (ExecutionException e) {
            return Envelope.error(String.valueOf(e.getCause()));
        } finally {
            answer.complete(null);
            if (!rt.isClosed()) rt.run(() -> reg.removeLink(link));
        }
    }
}
