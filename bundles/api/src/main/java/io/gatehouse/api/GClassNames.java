// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/** Gclass names. Bundles find each other by these names at run time, never by class. */
public final class GClassNames {
    private GClassNames() {}

    public static final String C_YUNO = "C_YUNO";
    public static final String C_TCP = "C_TCP";
    public static final String C_TCP_S = "C_TCP_S";
    public static final String C_PROT_TCP4H = "C_PROT_TCP4H";
    public static final String C_CHANNEL = "C_CHANNEL";
    public static final String C_IOGATE = "C_IOGATE";
    public static final String C_QIOGATE = "C_QIOGATE";
    public static final String C_MQIOGATE = "C_MQIOGATE";
    public static final String C_RELAY = "C_RELAY";
    public static final String C_SINK = "C_SINK";
}
