// JSONParser on valid input: every kind of value, number edge cases (Int64 limits, -0, exponents, out of range),
// escapes and surrogate pairs, duplicate keys, nesting limits. Rejections live in JSONParserTests+Errors.swift.

import Testing
import WireProtocol
import TestSupport

struct JSONParserTests {
    static let valid: [(String, JSONValue)] = [
        ("null", .null), ("true", .bool(true)), ("false", .bool(false)),
        ("0", .int(0)), ("-0", .int(0)), ("7", .int(7)), ("-42", .int(-42)), ("123456789", .int(123_456_789)),
        ("9223372036854775807", .int(.max)), ("-9223372036854775808", .int(.min)),
        ("9223372036854775808", .double(9_223_372_036_854_775_808.0)),
        ("-9223372036854775809", .double(-9_223_372_036_854_775_809.0)),
        ("18446744073709551616", .double(18_446_744_073_709_551_616.0)),
        ("123456789012345678901234567890", .double(1.2345678901234568e29)),
        ("1.5", .double(1.5)), ("-0.0", .double(-0.0)), ("0.1", .double(0.1)), ("1E2", .double(100)),
        ("1e2", .double(100)), ("1e-2", .double(0.01)), ("1E+2", .double(100)), ("-12.25e+3", .double(-12250)),
        ("0e0", .double(0)), ("1.0", .double(1)), ("2.5e-5", .double(2.5e-5)), ("1e-400", .double(0)),
        ("4.9e-324", .double(.leastNonzeroMagnitude)), ("2.2250738585072014e-308", .double(2.2250738585072014e-308)),
        ("1.7976931348623157e308", .double(1.7976931348623157e308)), ("1e22", .double(1e22)), ("1e23", .double(1e23)),
        ("9007199254740993", .int(9_007_199_254_740_993)), ("9007199254740993.0", .double(9_007_199_254_740_992)),
        ("0.30000000000000004", .double(0.30000000000000004)), ("3.141592653589793", .double(3.141592653589793)),
        ("\"\"", .string("")), ("\"abc\"", .string("abc")),
        (#""\"\\\/\b\f\n\r\t""#, .string("\"\\/\u{8}\u{C}\n\r\t")),
        (#""\u0041\u00e9\u4E2D""#, .string("Aé中")), (#""\ud83d\ude00""#, .string("😀")),
        (#""\uD834\uDD1E""#, .string("𝄞")), (#""\u0000""#, .string("\u{0}")), (#""a\u0000b""#, .string("a\u{0}b")),
        (#""\uffff\u007f""#, .string("\u{FFFF}\u{7F}")),
        ("\"héllo 中文 😀 \u{10FFFF}\"", .string("héllo 中文 😀 \u{10FFFF}")),
        (#""tab\there""#, .string("tab\there")), (#""\n"# + "\u{FEFF}x\"", .string("\n\u{FEFF}x")),
        ("\"\u{7F}\"", .string("\u{7F}")),
        ("[]", .array([])), ("{}", .object(JSONObject())), (" [ 1 , 2 ] ", .array([.int(1), .int(2)])),
        ("\t\n\r [true]\r\n", .array([.bool(true)])), ("[[[]]]", .array([.array([.array([])])])),
        (
            "[1,\"a\",null,false,1.5,{}]",
            .array([.int(1), .string("a"), .null, .bool(false), .double(1.5), .object([:])])
        ),
        (#"{"a":{"b":[1,{"c":null}]}}"#, ["a": ["b": [1, ["c": .null]]]]),
        (#"{ "key" : "value" , "n" : -1 }"#, ["key": "value", "n": -1]),
        (#"{"":0}"#, ["": 0]), (#"{"\u0041":1}"#, ["A": 1]),
    ]

    @Test("valid documents parse to the expected values", arguments: JSONParserTests.valid)
    func validDocuments(text: String, expected: JSONValue) throws {
        let value = try JSONParser.parse(text)
        #expect(identical(value, expected), "\(value) != \(expected)")
        // The three entry points agree.
        #expect(try identical(JSONParser.parse(bytes(text)), expected))
        let viaRaw = bytes(text).withUnsafeBytes { raw in
            Result { () throws(WireError) in try JSONParser.parse(raw) }
        }
        #expect(try identical(viaRaw.get(), expected))
    }

    @Test("-0 is the integer 0 but -0.0 keeps its sign")
    func negativeZero() throws {
        #expect(try JSONParser.parse("-0") == .int(0))
        guard case .double(let value) = try JSONParser.parse("-0.0") else {
            Issue.record("not a double")
            return
        }
        #expect(value.sign == .minus)
        guard case .double(let small) = try JSONParser.parse("-1e-400") else {
            Issue.record("not a double")
            return
        }
        #expect(small == 0 && small.sign == .minus)
    }

    @Test(
        "numbers that overflow a double are out of range",
        arguments: [
            ("1e400", 0), ("-1e400", 0), ("[0, 1e309]", 4), ("2e308", 0), ("1" + String(repeating: "0", count: 400), 0),
            ("3e1111111111135", 0), ("{\"a\":17976931348623159e292}", 5),
        ])
    func outOfRange(text: String, offset: Int) {
        #expect(throws: WireError.numberOutOfRange(offset: offset)) { try JSONParser.parse(text) }
    }

    @Test("the largest finite double and numbers that round down to it are in range")
    func largestDouble() throws {
        #expect(try JSONParser.parse("1.7976931348623158e308") == .double(.greatestFiniteMagnitude))
        #expect(try JSONParser.parse("-1.7976931348623157e308") == .double(-.greatestFiniteMagnitude))
    }

    @Test("decimal text parses to the correctly rounded double (checked against the stdlib)")
    func correctlyRounded() throws {
        var random = SeededRandom(seed: 7)
        for _ in 0..<5000 {
            let digits = String(
                (0..<Int.random(in: 1...20, using: &random)).map { _ in
                    "0123456789".randomElement(using: &random)!
                })
            let exponent = Int.random(in: -330...310, using: &random)
            let text = "1\(digits)e\(exponent)"
            let expected = Double(text)!
            if expected.isFinite {
                #expect(try JSONParser.parse(text) == .double(expected), "\(text)")
            }
            let fraction = "0.\(digits)"
            #expect(try JSONParser.parse(fraction) == .double(Double(fraction)!), "\(fraction)")
        }
    }

    @Test("a later duplicate key replaces the earlier value in place")
    func duplicateKeys() throws {
        guard case .object(let object) = try JSONParser.parse(#"{"a":1,"b":2,"a":3}"#) else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["a", "b"])
        #expect(object.values == [.int(3), .int(2)])
    }

    @Test("large objects with duplicate keys keep first-seen order and the last value")
    func largeObjectDuplicates() throws {
        let members = (0..<100).map { "\"k\($0 % 40)\":\($0)" }.joined(separator: ",")
        guard case .object(let object) = try JSONParser.parse("{\(members)}") else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == (0..<40).map { "k\($0)" })
        let lastValues: [JSONValue] = (0..<40).map { (index: Int) -> JSONValue in
            .int(Int64(index < 20 ? index + 80 : index + 40))
        }
        #expect(object.values == lastValues)
    }

    @Test("nesting up to maxDepth is accepted", arguments: [0, 1, 2, 63, 64])
    func nestingWithinLimit(depth: Int) throws {
        let arrays = String(repeating: "[", count: depth) + "1" + String(repeating: "]", count: depth)
        #expect(throws: Never.self) { try JSONParser.parse(arrays) }
        if depth > 0 {
            let empty = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            #expect(throws: Never.self) { try JSONParser.parse(empty) }
        }
        let objects = String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(throws: Never.self) { try JSONParser.parse(objects) }
    }

    @Test("nesting beyond maxDepth is rejected", arguments: [65, 66, 1000])
    func nestingBeyondLimit(depth: Int) {
        let arrays = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        #expect(throws: WireError.tooDeep(limit: 64)) { try JSONParser.parse(arrays) }
        let objects = String(repeating: "{\"a\":", count: depth) + "1" + String(repeating: "}", count: depth)
        #expect(throws: WireError.tooDeep(limit: 64)) { try JSONParser.parse(objects) }
        let mixed = String(repeating: "[{\"a\":", count: depth / 2 + 1)
        #expect(throws: WireError.tooDeep(limit: 64)) { try JSONParser.parse(mixed) }
    }

    @Test("maxDepth is configurable, and 0 allows only scalars")
    func customDepth() throws {
        #expect(try JSONParser.parse("[[1]]", maxDepth: 2) == [[1]])
        #expect(throws: WireError.tooDeep(limit: 1)) { try JSONParser.parse("[[1]]", maxDepth: 1) }
        #expect(try JSONParser.parse("1", maxDepth: 0) == 1)
        #expect(throws: WireError.tooDeep(limit: 0)) { try JSONParser.parse("[]", maxDepth: 0) }
    }

    @Test("a megabyte of open brackets is rejected without recursion, whatever maxDepth is")
    func megabyteOfBrackets() {
        let brackets = [UInt8](repeating: UInt8(ascii: "["), count: 1 << 20)
        #expect(throws: WireError.tooDeep(limit: 64)) { try JSONParser.parse(brackets) }
        // Even with no depth limit, the parser itself never recurses; the input is simply unterminated.
        #expect(throws: WireError.syntax(offset: 1 << 20, reason: "unexpected end of input, expected a value")) {
            try JSONParser.parse(brackets, maxDepth: .max)
        }
    }

    @Test("long strings with and without escapes")
    func longStrings() throws {
        let plain = String(repeating: "abcdéf中😀", count: 10_000)
        #expect(try JSONParser.parse("\"\(plain)\"") == .string(plain))
        let escaped = String(repeating: "a\\n\\u00e9", count: 10_000)
        #expect(try JSONParser.parse("\"\(escaped)\"") == .string(String(repeating: "a\né", count: 10_000)))
    }

    @Test("every Unicode scalar survives as an escape and as raw UTF-8", arguments: [0, 1, 2, 3, 4, 5, 6, 7])
    func allScalars(slice: Int) throws {
        for code in stride(from: UInt32(slice), through: 0x10FFFF, by: 8 * 97) {
            guard let scalar = Unicode.Scalar(code) else { continue }
            let expected = JSONValue.string(String(Character(scalar)))
            var escape = ""
            for unit in String(Character(scalar)).utf16 {
                let hex = String(unit, radix: 16)
                escape += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
            #expect(try JSONParser.parse("\"\(escape)\"") == expected, "U+\(String(code, radix: 16))")
            if code >= 0x20 && code != 0x22 && code != 0x5C {
                #expect(try JSONParser.parse("\"\(Character(scalar))\"") == expected)
            }
        }
    }
}
