// JSONParser on invalid input: a table of malformed documents with the error and byte offset each must produce
// (syntax, invalid UTF-8, surrogates, trailing garbage, empty input), and every proper prefix of valid documents.

import Testing
import WireProtocol

struct JSONParserErrorTests {
    /// Input bytes and the byte offset of the `.syntax` error they must produce.
    static let syntaxErrors: [(String, [UInt8], Int)] = [
        ("empty input", [], 0), ("only whitespace", bytes(" \t\r\n"), 4),
        ("trailing comma in array", bytes("[1,]"), 3), ("trailing comma in object", bytes(#"{"a":1,}"#), 7),
        ("leading comma", bytes("[,1]"), 1), ("double comma", bytes("[1,,2]"), 3), ("missing comma", bytes("[1 2]"), 3),
        ("missing member comma", bytes(#"{"a":1 "b":2}"#), 7), ("colon in array", bytes(#"["a":1]"#), 4),
        ("single-quoted string", bytes("['a']"), 1), ("single-quoted key", bytes("{'a':1}"), 1),
        ("unquoted key", bytes("{a:1}"), 1), ("number key", bytes("{1:2}"), 1),
        ("key without value", bytes(#"{"a"}"#), 4),
        ("missing value", bytes(#"{"a":}"#), 5), ("missing colon", bytes(#"{"a" 1}"#), 5),
        ("leading zero", bytes("01"), 1), ("negative leading zero", bytes("-01"), 2), ("leading zeros", bytes("00"), 1),
        ("bare decimal point", bytes("1."), 2), ("no integer part", bytes(".5"), 0), ("plus sign", bytes("+1"), 0),
        ("fraction without digits before exponent", bytes("1.e5"), 2), ("empty exponent", bytes("1e"), 2),
        ("signed empty exponent", bytes("1e+"), 3), ("empty exponent after fraction", bytes("1.0e-"), 5),
        ("lone minus", bytes("-"), 1), ("minus then letter", bytes("-a"), 1), ("NaN", bytes("NaN"), 0),
        ("Infinity", bytes("Infinity"), 0), ("-Infinity", bytes("-Infinity"), 1), ("hex number", bytes("0x10"), 1),
        ("letters after number", bytes("123abc"), 3), ("capitalized literal", bytes("True"), 0),
        ("truncated true", bytes("tru"), 3), ("truncated null", bytes("nul"), 3),
        ("misspelled false", bytes("fals e"), 4),
        ("literal with suffix", bytes("truex"), 4), ("two values", bytes("1 2"), 2),
        ("two literals", bytes("true false"), 5),
        ("garbage after array", bytes("[1]x"), 3), ("second document", bytes("{}{}"), 2),
        ("comment", bytes("/*c*/1"), 0),
        ("unterminated string", bytes("\"abc"), 4), ("unterminated after escape", bytes("\"\\\""), 3),
        ("backslash at end", bytes("\"\\"), 2), ("unterminated array", bytes("[1,2"), 4),
        ("open bracket", bytes("["), 1),
        ("open brace", bytes("{"), 1), ("key then end", bytes(#"{"a""#), 4), ("colon then end", bytes(#"{"a":"#), 5),
        ("close bracket", bytes("]"), 0), ("mismatched close", bytes("[1}"), 2),
        ("mismatched close object", bytes(#"{"a":1]"#), 6),
        ("raw control character", bytes("\"a\u{1}b\""), 2), ("raw tab in string", bytes("\"\t\""), 1),
        ("raw newline in string", bytes("\"a\nb\""), 2), ("raw NUL in string", [0x22, 0x00, 0x22], 1),
        ("unknown escape", bytes(#""\x41""#), 2), ("escaped single quote", bytes(#""\'""#), 2),
        ("short unicode escape", bytes(#""\u12""#), 5), ("bad hex digit", bytes(#""\u12g4""#), 5),
        ("lone high surrogate", bytes(#""\ud800""#), 1), ("lone low surrogate", bytes(#""\udc00""#), 1),
        ("high surrogate then letter", bytes(#""\ud800x""#), 1),
        ("high then non-surrogate", bytes(#""\ud800\u0041""#), 7),
        ("two high surrogates", bytes(#""\ud800\ud800""#), 7), ("reversed pair", bytes(#""\ude00\ud83d""#), 1),
        ("high surrogate at end", bytes(#""\ud83d"#), 1), ("overlong slash", [0x22, 0xC0, 0xAF, 0x22], 1),
        ("overlong C1", [0x22, 0xC1, 0xBF, 0x22], 1), ("overlong three-byte", [0x22, 0xE0, 0x80, 0xAF, 0x22], 2),
        ("overlong four-byte", [0x22, 0xF0, 0x80, 0x80, 0xAF, 0x22], 2),
        ("UTF-8 encoded surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22], 2),
        ("UTF-8 encoded low surrogate", [0x22, 0xED, 0xBF, 0xBF, 0x22], 2),
        ("above U+10FFFF", [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 2),
        ("byte F5", [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], 1),
        ("byte FF", [0x22, 0xFF, 0x22], 1), ("byte FE", [0x22, 0xFE, 0x22], 1),
        ("lone continuation byte", [0x22, 0x80, 0x22], 1), ("truncated two-byte", [0x22, 0xC3, 0x22], 2),
        ("truncated three-byte", [0x22, 0xE2, 0x82, 0x22], 3),
        ("truncated four-byte", [0x22, 0xF0, 0x9F, 0x98, 0x22], 4),
        ("truncated at end of input", [0x22, 0xE2, 0x82], 1), ("invalid UTF-8 in a key", [0x7B, 0x22, 0xC0, 0x22], 2),
        ("invalid UTF-8 after an escape", [0x22, 0x5C, 0x6E, 0xFF, 0x22], 3),
        ("byte order mark", bytes("\u{FEFF}1"), 0),
        ("form feed whitespace", bytes("\u{C}1"), 0), ("vertical tab whitespace", bytes("\u{B}1"), 0),
        ("no-break space", bytes("\u{A0}1"), 0), ("NUL after value", [0x31, 0x00], 1),
        ("invalid UTF-8 outside a string", [0xC3, 0xA9], 0),
    ]

    @Test("malformed documents are rejected with a syntax error at the right offset", arguments: syntaxErrors)
    func syntaxError(name: String, input: [UInt8], offset: Int) {
        do {
            let value = try JSONParser.parse(input)
            Issue.record("\(name): accepted as \(value)")
        } catch {
            guard case .syntax(let actualOffset, let reason) = error else {
                Issue.record("\(name): \(error)")
                return
            }
            #expect(actualOffset == offset, "\(name): \(reason)")
            #expect(!reason.isEmpty)
        }
    }

    @Test("error descriptions read well")
    func descriptions() {
        #expect(
            WireError.syntax(offset: 3, reason: "expected a value, found ']'").description
                == "invalid JSON at byte 3: expected a value, found ']'")
        #expect(WireError.lineTooLong(limit: 10).description == "line longer than 10 bytes")
        #expect(WireError.tooDeep(limit: 64).description == "JSON nested deeper than 64 levels")
        #expect(WireError.numberOutOfRange(offset: 0).description.contains("out of range"))
        #expect(throws: WireError.syntax(offset: 0, reason: "empty input")) { try JSONParser.parse("") }
        #expect(throws: WireError.syntax(offset: 3, reason: "expected a value, found ']'")) {
            try JSONParser.parse("[1,]")
        }
    }

    static let prefixCorpus = [
        #"{"jsonrpc":"2.0","id":1,"method":"set","params":{"path":"a.b.c","value":42.5}}"#,
        #"[1,-2.5e-3,true,false,null,"x\u00e9\ud83d\ude00\n",{"":[]},[[]],{}]"#,
        #"{"a" : [ 1 , { "b" : "c" } ] , "d" : -0.0 }"#, #""héllo 😀 \"quoted\"""#, "[12345678901234567890]",
        "true", "false", "null", #"{"nested":{"deeper":{"deepest":[1e10,2E-2]}}}"#,
    ]

    @Test("every proper prefix of a valid document is rejected", arguments: prefixCorpus)
    func prefixesAreRejected(document: String) throws {
        let wire = bytes(document)
        _ = try JSONParser.parse(wire)
        for cut in 0..<wire.count {
            #expect(throws: WireError.self, "prefix of \(cut) bytes") { try JSONParser.parse(Array(wire[..<cut])) }
        }
    }

    @Test("every proper prefix of random documents is rejected", arguments: 0..<10)
    func randomPrefixesAreRejected(seed: UInt64) throws {
        var random = RandomJSON(seed: seed)
        for _ in 0..<20 {
            let wire = JSONWriter.encode(random.container(depth: 3))
            for cut in 0..<wire.count {
                do {
                    let value = try JSONParser.parse(Array(wire[..<cut]))
                    Issue.record("prefix \(cut) of \(String(decoding: wire, as: UTF8.self)) accepted as \(value)")
                } catch {}
            }
        }
    }

    @Test("random byte flips never crash the parser", arguments: 0..<10)
    func mutations(seed: UInt64) throws {
        var random = RandomJSON(seed: seed)
        let interesting: [UInt8] = [0x00, 0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x80, 0xC0, 0xED, 0xF4, 0xFF]
        for _ in 0..<50 {
            var wire = JSONWriter.encode(random.container(depth: 3))
            for _ in 0..<Int.random(in: 1...3, using: &random.generator) where !wire.isEmpty {
                let position = Int.random(in: 0..<wire.count, using: &random.generator)
                wire[position] = interesting.randomElement(using: &random.generator)!
            }
            // Either outcome is fine; the point is no crash and, on success, a value that re-encodes and re-parses.
            if let value = try? JSONParser.parse(wire) {
                #expect(try JSONParser.parse(JSONWriter.encode(value)) == value)
            }
        }
    }
}
