package flinkoperator.bluegreen;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class JsonTest {
    @Test
    void parsesEveryKindOfValue() {
        Object v =
                Json.parse(
                        " {\"s\": \"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\", \"i\": -12, \"big\":"
                                + " 123456789012345678901234567890, \"f\": 1.5e3, \"t\": true,"
                                + " \"n\": null, \"a\": [1, [], {}], \"o\": {\"x\": false}} ");
        Map<?, ?> m = (Map<?, ?>) v;
        assertEquals("a\"b\\c/d\n\t\u00e9\ud83d\ude00", m.get("s"));
        assertEquals(-12L, m.get("i"));
        assertEquals(new BigDecimal("123456789012345678901234567890"), m.get("big"));
        assertEquals(new BigDecimal("1.5e3"), m.get("f"));
        assertEquals(Boolean.TRUE, m.get("t"));
        assertNull(m.get("n"));
        assertEquals(Arrays.asList(1L, List.of(), Map.of()), m.get("a"));
        assertEquals(Map.of("x", false), m.get("o"));
    }

    @Test
    void writesAndReadsBack() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("s", "quote \" back \\ ctl \u0001 nl \n \u2028");
        m.put("n", null);
        m.put("l", 42L);
        m.put("a", Arrays.asList("x", true, null));
        String text = Json.write(m);
        assertEquals(
                "{\"s\":\"quote \\\" back \\\\ ctl \\u0001 nl \\n \\u2028\",\"n\":null,\"l\":42,"
                        + "\"a\":[\"x\",true,null]}",
                text);
        assertEquals(m, Json.parse(text));
    }

    @Test
    void rejectsMalformedText() {
        for (String bad :
                new String[] {
                    "", "{", "{\"a\"}", "{\"a\":1,}", "[1 2]", "\"abc", "01", "-", "1.", "tru",
                    "\"\\x\"", "\"\\u12\"", "{} x", "\"a\nb\""
                }) {
            assertThrows(Json.ParseException.class, () -> Json.parse(bad), bad);
        }
    }
}
