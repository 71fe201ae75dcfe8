// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Gbuffers;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The JSON objects of a request body: one object, or NDJSON (one object per line), or any mix of objects separated
 * by white space (a pretty-printed object spans lines). One streaming pass checks the syntax of the whole body before
 * anything is published, so a bad line refuses the request and nothing of it goes up; it yields each object's byte
 * range, and {@link #writeMessage} copies an object with the request's {@code __md_trq__} added as its last key.
 */
final class Ndjson {
    private Ndjson() {}

    private static final byte[] MD_OPEN = ("\"" + Kw.MD_TRQ + "\":{\"" + ProtHttpSr.MD_CONN + "\":")
            .getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MD_REQ = (",\"" + ProtHttpSr.MD_REQ + "\":").getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MD_MSG = (",\"" + ProtHttpSr.MD_MSG + "\":").getBytes(StandardCharsets.US_ASCII);

    /** What a body holds: the byte ranges of its objects, or the first error and its line. */
    static final class Scan {
        int count;
        int[] starts = new int[8];
        int[] ends = new int[8];
        /** Null when the body is good. */
        String error;
        /** 1-based line of the error (0 when the error is not on a line: too many objects). */
        int errorLine;
        /** More objects than the limit: the scan stopped there. */
        boolean tooMany;

        /**
         * Per object, its member index when its bytes are already a record ({@code Kw.BATCH_RECORDS}), else null;
         * null as a whole when the scan did not check (Jackson's).
         */
        int[][] records;

        void add(int start, int end) {
            if (count == starts.length) {
                starts = java.util.Arrays.copyOf(starts, count * 2);
                ends = java.util.Arrays.copyOf(ends, count * 2);
            }
            starts[count] = start;
            ends[count] = end;
            count++;
        }

        void add(int start, int end, int[] recordFields) {
            add(start, end);
            if (records == null) {
                records = new int[starts.length][];
            } else if (records.length < starts.length) {
                records = java.util.Arrays.copyOf(records, starts.length);
            }
            records[count - 1] = recordFields;
        }
    }

    /**
     * Scans {@code len} bytes of {@code a} from {@code off}. Ranges are absolute indexes into {@code a}; at most
     * {@code maxObjects} are taken (one more makes {@link Scan#tooMany}).
     */
    static Scan scan(byte[] a, int off, int len, int maxObjects) {
        Scan s = new Scan();
        try (JsonParser p = Kw.MAPPER.getFactory().createParser(a, off, len)) {
            for (JsonToken t; (t = p.nextToken()) != null; ) {
                JsonLocation at = p.currentTokenLocation();
                if (t != JsonToken.START_OBJECT) {
                    s.error = "not a JSON object";
                    s.errorLine = at.getLineNr();
                    return s;
                }
                if (s.count == maxObjects) {
                    s.tooMany = true;
                    s.error = "more than " + maxObjects + " objects";
                    return s;
                }
                int start = off + (int) at.getByteOffset();
                p.skipChildren();
                int end = off + (int) p.currentLocation().getByteOffset();
                s.add(start, end);
            }
        } catch (JsonProcessingException e) {
            s.error = e.getOriginalMessage();
            s.errorLine = e.getLocation() == null ? 0 : e.getLocation().getLineNr();
        } catch (IOException e) {
            s.error = String.valueOf(e.getMessage());
        }
        return s;
    }

    /**
     * Writes the object {@code body[start, end)} into {@code out} with {@code "__md_trq__": {conn, req, msg}} added
     * as its last key ({@link Gbuffers#writeWithLastKey}): the relay takes the last of duplicate keys, so a client's
     * own {@code __md_trq__} cannot stand in for ours. {@code mdHead} is the part every message of the request
     * shares ({@link #mdHead}), written once per request. The ranges come from a scan that found the objects.
     */
    static void writeMessage(ByteBuf out, ByteBuf body, int start, int end, byte[] mdHead, int msg) {
        Gbuffers.writeWithLastKey(out, body, start, end, mdHead, msg);
    }

    /** {@code "__md_trq__":{"conn":C,"req":R,"msg":}: the metadata up to the message's index. */
    static byte[] mdHead(long conn, long req) {
        return (new String(MD_OPEN, StandardCharsets.US_ASCII) + conn + new String(MD_REQ, StandardCharsets.US_ASCII)
                + req + new String(MD_MSG, StandardCharsets.US_ASCII)).getBytes(StandardCharsets.US_ASCII);
    }

}
