// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import java.util.Locale;
import java.util.Set;

/**
 * A parsed Yuneta url {@code schema://host[:port][/path][?query]} (IPv6 hosts in brackets), as
 * {@code parse_url()} in helpers.c: the schema is mandatory; a secure schema selects TLS.
 */
final class Url {
    private static final Set<String> PLAIN = Set.of("tcp", "tcp4h", "http", "mqtt", "ws");
    private static final Set<String> SECURE = Set.of("tcps", "tcp4hs", "https", "mqtts", "wss", "smtps");

    final String schema;
    final String host;
    final int port;
    final boolean secure;
    final boolean knownSchema;

    private Url(String schema, String host, int port, boolean secure, boolean known) {
        this.schema = schema;
        this.host = host;
        this.port = port;
        this.secure = secure;
        this.knownSchema = known;
    }

    /**
     * @throws IllegalArgumentException with Yuneta's text when the url cannot be parsed
     */
    static Url parse(String url) {
        if (url == null || url.isEmpty()) throw new IllegalArgumentException("URL NULL");
        int sep = url.indexOf("://");
        if (sep <= 0) throw new IllegalArgumentException("parse_url() FAILED, no schema");
        String schema = url.substring(0, sep).toLowerCase(Locale.ROOT);
        String rest = url.substring(sep + 3);
        int end = rest.length();
        for (int i = 0; i < rest.length(); i++) {
            char c = rest.charAt(i);
            if (c == '/' || c == '?' || c == '#') {
                end = i;
                break;
            }
        }
        String hostPort = rest.substring(0, end);
        String host;
        String portText = null;
        if (hostPort.startsWith("[")) {
            int close = hostPort.indexOf(']');
            if (close < 0) throw new IllegalArgumentException("Parsing url failed: unclosed IPv6 bracket");
            host = hostPort.substring(1, close);
            String after = hostPort.substring(close + 1);
            if (after.startsWith(":")) portText = after.substring(1);
            else if (!after.isEmpty()) throw new IllegalArgumentException("Parsing url failed: bad port");
        } else {
            int colon = hostPort.lastIndexOf(':');
            if (colon >= 0) {
                host = hostPort.substring(0, colon);
                portText = hostPort.substring(colon + 1);
            } else {
                host = hostPort;
            }
        }
        if (host.isEmpty()) throw new IllegalArgumentException("Parsing url failed: no host");
        int port;
        if (portText == null || portText.isEmpty()) {
            port = defaultPort(schema);
        } else {
            try {
                port = Integer.parseInt(portText);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("Parsing url failed: bad port '" + portText + "'");
            }
            if (port < 0 || port > 65535) throw new IllegalArgumentException("Parsing url failed: bad port " + port);
        }
        boolean secure = SECURE.contains(schema);
        return new Url(schema, host, port, secure, secure || PLAIN.contains(schema));
    }

    private static int defaultPort(String schema) {
        switch (schema) {
            case "http": case "ws": return 80;
            case "https": case "wss": return 443;
            case "mqtt": return 1883;
            case "mqtts": return 8883;
            case "smtps": return 465;
            default: return 0;
        }
    }
}
