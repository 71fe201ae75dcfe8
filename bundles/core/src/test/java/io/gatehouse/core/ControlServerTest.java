package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.Kw;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ControlServerTest {
    private YunoRuntime rt;
    private ControlServer cs;
    private int port;

    @BeforeEach
    void setUp() throws IOException {
        rt = YunoRuntime.builder().name("ctl").gclass(TestGClasses.NODE)
                .config("{\"services\": [{\"name\": \"svc\", \"gclass\": \"C_NODE\"}]}").build().start();
        cs = new ControlServer(rt, "s3cret", false);
        port = cs.start("127.0.0.1", 0);
    }

    @AfterEach
    void tearDown() {
        cs.close();
        rt.close();
    }

    private static JsonNode ask(DataOutputStream out, DataInputStream in, String json) throws IOException {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length + 4);
        out.write(b);
        out.flush();
        int len = in.readInt();
        byte[] a = new byte[len - 4];
        in.readFully(a);
        return Kw.MAPPER.readTree(a);
    }

    @Test
    void shouldAnswerCommandsAndKeepTheLinkUpAfterBadRequests() throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = new DataInputStream(s.getInputStream());
            JsonNode ok = ask(out, in, "{\"command\": \"stats-yuno service=svc\", \"token\": \"s3cret\"}");
            assertEquals(0, ok.get("result").asInt(), ok.toString());
            assertTrue(ok.get("data").has("count"));
            JsonNode bad = ask(out, in, "{not json");
            assertEquals(-1, bad.get("result").asInt());
            JsonNode noToken = ask(out, in, "{\"command\": \"help\"}");
            assertTrue(noToken.get("comment").asText().contains("token"), noToken.toString());
            JsonNode unknown = ask(out, in, "{\"command\": \"stats-yuno service=nope\", \"token\": \"s3cret\"}");
            assertTrue(unknown.get("comment").asText().contains("not found"), unknown.toString());
            JsonNode withKw = ask(out, in, "{\"command\": \"command-yuno\", \"token\": \"s3cret\","
                    + " \"kw\": {\"service\": \"svc\", \"command\": \"hello\", \"times\": 2}}");
            assertEquals(2, withKw.get("data").get("times").asInt(), withKw.toString());
        }
    }

    @Test
    void shouldCloseTheConnectionOnAZeroLengthFrame() throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(4);
            out.flush();
            assertEquals(-1, s.getInputStream().read(), "closed by the endpoint");
        }
    }
}
