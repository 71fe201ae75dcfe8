// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.CommandSpec;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Param;
import io.gatehouse.core.YunoRuntime;

import java.util.function.Function;

/**
 * Another revision of a gclass, for live-upgrade tests without OSGi: the tables of a spec (attributes in their
 * slots, FSM, commands, trace levels, contracts) with another state version and behaviour factory, as the bundle
 * of a second revision would register it. {@code rt.gclassArrived(Revision.of(MyGate.SPEC, 0, factory))} is an
 * upgrade to a revision that takes no state, which core answers with a rebuild; {@link #next} is a revision of the
 * same state version, and {@link #handOver} upgrades to it and checks that every gobj was handed over.
 */
public final class Revision {
    private Revision() {}

    /**
     * The next revision of {@code spec}'s gclass, of the same state version: a spec of its own (core hands the gobjs
     * over to it) from the same behaviour class.
     */
    public static <B extends GObjBehavior> GClassSpec<B> next(GClassSpec<B> spec) {
        return spec.withFactory(spec.factory());
    }

    /**
     * Upgrades {@code rt} to {@code to} and checks that it was a live upgrade: {@code gobjs} gobjs handed over, no
     * service rebuilt. Answers core's report.
     */
    public static ObjectNode handOver(YunoRuntime rt, GClassSpec<?> to, int gobjs) {
        ObjectNode report = rt.gclassArrived(to);
        if (report.path("gobjs_migrated").asInt() != gobjs || report.path("rebuilt").size() != 0) {
            throw new AssertionError("expected " + gobjs + " gobjs handed over and no rebuild: " + report);
        }
        return report;
    }

    /** {@code spec}'s tables with {@code stateVersion} and {@code factory}. */
    public static <B extends GObjBehavior> GClassSpec<B> of(GClassSpec<B> spec, int stateVersion,
                                                             Function<GObj, B> factory) {
        return of(spec, stateVersion, factory, API_NOW);
    }

    /**
     * {@code spec} as a revision built before durable tokens (api 2.2) would declare it: the same tables, durability
     * confirmed by dict only, and no later capability.
     */
    public static <B extends GObjBehavior> GClassSpec<B> withoutDurableTokens(GClassSpec<B> spec) {
        return of(spec, spec.stateVersion(), spec.factory(), API_2_1);
    }

    /**
     * {@code spec} as a revision built before batches (api 2.4) would declare it: the same tables and every earlier
     * capability, without {@link GClassSpec#takesBatches()}.
     */
    public static <B extends GObjBehavior> GClassSpec<B> withoutBatches(GClassSpec<B> spec) {
        return of(spec, spec.stateVersion(), spec.factory(), API_2_3);
    }

    /** The api minor a revision was built against, for the capabilities it can declare. */
    private static final int API_2_1 = 1;
    private static final int API_2_3 = 3;
    private static final int API_NOW = Integer.MAX_VALUE;

    private static <B extends GObjBehavior> GClassSpec<B> of(GClassSpec<B> spec, int stateVersion,
                                                              Function<GObj, B> factory, int apiMinor) {
        @SuppressWarnings("unchecked")
        Class<B> type = (Class<B>) GObjBehavior.class;
        GClassSpec.Builder<B> b = GClassSpec.builder(spec.name(), type)
                .description(spec.description())
                .attrs(spec.attrs().values().toArray(new Attr<?>[0]))
                .fsm(spec.fsm())
                .acceptUnusedYunetaKeys(spec.unusedYunetaKeys().toArray(new String[0]))
                .subscriptionModel(spec.subscriptionModel())
                .stateVersion(stateVersion)
                .factory(factory);
        for (CommandSpec<B> c : spec.commands()) {
            b.command(c.name(), c.description(), c.handler(), c.params().toArray(new Param[0]));
            if (!c.aliases().isEmpty()) b.alias(c.aliases().toArray(new String[0]));
        }
        spec.traceLevels().forEach(b::traceLevel);
        if (spec.manualStart()) b.manualStart();
        if (spec.playable()) b.playable();
        if (spec.confirmsDurability()) b.confirmsDurability();
        if (spec.takesJsonRecords()) b.takesJsonRecords();
        if (apiMinor >= 2 && spec.answersDurableTokens()) b.answersDurableTokens();
        if (apiMinor >= 3 && spec.takesQueueRecords()) b.takesQueueRecords();
        if (apiMinor >= 4 && spec.takesBatches()) b.takesBatches();
        if (spec.linkUp() != null) b.linkUp(spec.linkUp());
        return b.build();
    }
}
