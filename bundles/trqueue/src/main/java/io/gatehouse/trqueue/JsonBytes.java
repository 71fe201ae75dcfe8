package io.gatehouse.trqueue;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import io.gatehouse.api.Kw;

import java.io.IOException;
import java.io.OutputStream;
import java.util.Arrays;
import java.util.Iterator;

/** Compact JSON of a kw into a reused byte array: the append path allocates nothing per message. */
final class JsonBytes extends OutputStream {
    byte[] buf = new byte[4096];
    int len;

    int encode(ObjectNode kw) throws IOException {
        len = 0;
        JsonNode n = hasRefs(kw) ? Kw.withoutRefs(kw) : kw;
        try (JsonGenerator g = Kw.MAPPER.getFactory().createGenerator(this)) {
            Kw.MAPPER.writeTree(g, n);
        }
        return len;
    }

    private static boolean hasRefs(JsonNode n) {
        if (n instanceof POJONode) return true;
        if (n.isContainerNode()) {
            Iterator<JsonNode> it = n.elements();
            while (it.hasNext()) if (hasRefs(it.next())) return true;
        }
        return false;
    }

    @Override
    public void write(int b) {
        if (len == buf.length) buf = Arrays.copyOf(buf, len * 2);
        buf[len++] = (byte) b;
    }

    @Override
    public void write(byte[] b, int off, int n) {
        if (len + n > buf.length) buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
        System.arraycopy(b, off, buf, len, n);
        len += n;
    }
}
