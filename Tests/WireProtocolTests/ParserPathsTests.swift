// The parser's fast paths against its general ones: the recursive path for shallow containers against the iterative
// one for deep containers (every recursion limit must give the same values and the same errors), RPCMessage's
// direct reading of a request object against reading the parsed value, and objects whose keys are the protocol's
// known words (their key arrays come from literals) against the general rules for keys and duplicates.

import Testing

@testable import WireProtocol
import TestSupport

struct ParserPathsTests {
    /// The outcome of parsing, comparable: values must be identical (key order, -0.0), errors equal.
    static func outcome(_ wire: [UInt8], maxDepth: Int = 64, recursionLimit: Int? = nil) -> Result<JSONValue, WireError>
    {
        if let recursionLimit {
            return Result { () throws(WireError) in
                try JSONParser.parse(wire, maxDepth: maxDepth, recursionLimit: recursionLimit)
            }
        }
        return Result { () throws(WireError) in try JSONParser.parse(wire, maxDepth: maxDepth) }
    }

    static func same(_ lhs: Result<JSONValue, WireError>, _ rhs: Result<JSONValue, WireError>) -> Bool {
        switch (lhs, rhs) {
        case (.success(let left), .success(let right)): identical(left, right)
        case (.failure(let left), .failure(let right)): left == right
        default: false
        }
    }

    /// Checks that lowering the recursion limit (down to a fully iterative parse) changes nothing for `wire`.
    static func checkRecursionLimits(_ wire: [UInt8]) {
        for maxDepth in [64, 3, 0] {
            let expected = Self.outcome(wire, maxDepth: maxDepth)
            for limit in [0, 1, 2, 5] {
                let actual = Self.outcome(wire, maxDepth: maxDepth, recursionLimit: limit)
                #expect(
                    Self.same(actual, expected),
                    "\(String(decoding: wire, as: UTF8.self)), maxDepth \(maxDepth), recursion limit \(limit)")
            }
        }
    }

    /// What RPCMessage.decode must say about `wire`: the parsed value read as a message, or the parse error.
    static func expectedIncoming(_ wire: [UInt8], maxDepth: Int) -> RPCIncoming {
        switch Self.outcome(wire, maxDepth: maxDepth) {
        case .success(let value): RPCMessage.decode(value: value)
        case .failure(let error): .parseError(RPCError(.parseError, error.description))
        }
    }

    @Test("every recursion limit gives the same values and errors", arguments: 0..<8)
    func recursionLimits(seed: UInt64) throws {
        var random = RandomJSON(seed: seed)
        let interesting: [UInt8] = [0x00, 0x20, 0x22, 0x5C, 0x7B, 0x7D, 0x5B, 0x5D, 0x2C, 0x3A, 0x31, 0xFF]
        for _ in 0..<40 {
            let wire = JSONWriter.encode(random.container(depth: 5))
            Self.checkRecursionLimits(wire)
            for cut in stride(from: 0, to: wire.count, by: max(1, wire.count / 16)) {
                Self.checkRecursionLimits(Array(wire[..<cut]))
            }
            var mutated = wire
            mutated[Int.random(in: 0..<mutated.count, using: &random.generator)] =
                interesting.randomElement(using: &random.generator)!
            Self.checkRecursionLimits(mutated)
        }
    }

    @Test(
        "containers nested beyond the recursion limit parse iteratively to the same values",
        arguments: [23, 24, 25, 100, 1000])
    func deepNesting(depth: Int) throws {
        let text = String(repeating: #"[{"a":"#, count: depth) + "1" + String(repeating: "}]", count: depth)
        var expected: JSONValue = 1
        for _ in 0..<depth { expected = [["a": expected]] }
        #expect(try JSONParser.parse(text, maxDepth: 2 * depth) == expected)
        #expect(throws: WireError.tooDeep(limit: 2 * depth - 1)) { try JSONParser.parse(text, maxDepth: 2 * depth - 1) }
        // A syntax error deep inside is reported where it is, whichever path meets it.
        let broken =
            String(repeating: #"[{"a":"#, count: depth) + "1" + String(repeating: "}]", count: depth - 1) + "}}"
        #expect(
            throws: WireError.syntax(
                offset: broken.utf8.count - 1, reason: "expected ',' or ']' after an array element, found '}'")
        ) {
            try JSONParser.parse(broken, maxDepth: 2 * depth)
        }
    }

    /// Member names and values that request lines are made of, including spellings the fast paths must not take
    /// for granted (escapes, look-alikes, duplicates, wrong types).
    static let memberNames = [
        #""jsonrpc""#, #""id""#, #""method""#, #""params""#, #""jsonrp\u0063""#, #""\u0069d""#, #""metho\u0064""#,
        #""par\u0061ms""#, #""extra""#, #""ids""#, #""i""#, #""methods""#, #""jsonrpc2""#, #""JSONRPC""#, #""méthod""#,
        #""""#, #""path""#, #""value""#,
    ]
    static let memberValues = [
        #""2.0""#, #""2.0 ""#, #""1.0""#, "2.0", "null", "true", "1", "-0", "12345", "1.5", "1e999",
        "123456789012345678901234567890", #""set""#, #""subscribe""#, #""k""#, #""""#, #""\u0032.0""#, "[]", "{}",
        "[1,2]", #"{"path":"k","value":1}"#, #"{"path":"a","path":"b"}"#, #"{"path":"k","options":["new","old"]}"#,
        #"{"a":{"b":[1,{"c":null}]}}"#, #"[[[[1]]]]"#, #"{"p\u0061th":1,"path":2}"#, #""é""#,
    ]

    @Test("a request object is read as its parsed value would be", arguments: 0..<8)
    func requestObjects(seed: UInt64) {
        var random = RandomJSON(seed: seed)
        let spaces = ["", "", " ", "\t", "\r\n "]
        for _ in 0..<400 {
            var text = spaces.randomElement(using: &random.generator)! + "{"
            for index in 0..<Int.random(in: 0..<7, using: &random.generator) {
                if index > 0 { text += "," + spaces.randomElement(using: &random.generator)! }
                text += Self.memberNames.randomElement(using: &random.generator)!
                text +=
                    spaces.randomElement(using: &random.generator)! + ":" + spaces.randomElement(
                        using: &random.generator)!
                text += Self.memberValues.randomElement(using: &random.generator)!
            }
            text += "}" + spaces.randomElement(using: &random.generator)!
            var wire = bytes(text)
            var variants = [wire, Array(wire[..<Int.random(in: 0...wire.count, using: &random.generator)])]
            wire[Int.random(in: 0..<wire.count, using: &random.generator)] =
                [0x20, 0x22, 0x5C, 0x7D, 0x2C, 0x3A, 0x80].randomElement(using: &random.generator)!
            variants.append(wire)
            for variant in variants {
                for maxDepth in [64, 2, 1, 0] {
                    #expect(
                        RPCMessage.decode(variant, maxDepth: maxDepth)
                            == Self.expectedIncoming(variant, maxDepth: maxDepth),
                        "\(String(decoding: variant, as: UTF8.self)), maxDepth \(maxDepth)")
                }
            }
        }
    }

    @Test(
        "member names and the version may be spelled with escapes",
        arguments: [
            #"{"\u006aSONRPC":"2.0","jsonrp\u0063":"2.0","\u0069d":1,"metho\u0064":"m","par\u0061ms":[1]}"#,
            #"{"jsonrpc":"2\u002e0","id":1,"method":"m","params":[1]}"#,
            #"{"jsonrpc":"1.0","id":1,"method":"m","params":[1],"jsonrpc":"2.0"}"#,
        ])
    func escapedMemberNames(text: String) {
        #expect(RPCMessage.decode(bytes(text)) == .single(.request(RPCRequest(id: 1, method: "m", params: [1]))))
    }

    @Test("objects whose keys are known words keep the general rules for order and duplicates")
    func knownWordKeys() throws {
        let cases: [(String, [String], [JSONValue])] = [
            (#"{"path":"k","value":1}"#, ["path", "value"], ["k", 1]),
            (#"{"value":1,"path":"k"}"#, ["value", "path"], [1, "k"]),
            (#"{"path":1,"path":2}"#, ["path"], [2]),
            (#"{"path":1,"value":2,"path":3}"#, ["path", "value"], [3, 2]),
            (#"{"path":1,"p\u0061th":2}"#, ["path"], [2]),
            (#"{"path":1,"k":2,"path":3}"#, ["path", "k"], [3, 2]),
            (
                #"{"path":1,"value":2,"options":3,"index":4,"seq":5,"id":6}"#,
                ["path", "value", "options", "index", "seq", "id"], [1, 2, 3, 4, 5, 6]
            ),
            (
                #"{"path":1,"value":2,"options":3,"index":4,"path":5}"#, ["path", "value", "options", "index"],
                [5, 2, 3, 4]
            ),
            (#"{"subscription":1,"seq":2}"#, ["subscription", "seq"], [1, 2]),
            (#"{"subscribe":1,"subscriptions":2,"2.0":3}"#, ["subscribe", "subscriptions", "2.0"], [1, 2, 3]),
            (#"{"id":{"id":{"id":1}}}"#, ["id"], [["id": ["id": 1]]]),
        ]
        for (text, keys, values) in cases {
            guard case .object(let object) = try JSONParser.parse(text) else {
                Issue.record("\(text) is not an object")
                continue
            }
            #expect(object.keys.map { Array($0.utf8) } == keys.map { Array($0.utf8) }, "\(text)")
            #expect(object.values == values, "\(text)")
        }
        // A key array shared between objects is still a value: changing one object leaves the other alone.
        guard case .object(var first) = try JSONParser.parse(#"{"path":"a","value":1}"#),
            case .object(let second) = try JSONParser.parse(#"{"path":"b","value":2}"#)
        else { return }
        first["extra"] = true
        first["path"] = nil
        #expect(first.keys == ["value", "extra"] && second.keys == ["path", "value"])
    }

    @Test("strings: known words, plain ASCII at every length, and the slow paths")
    func strings() throws {
        let words = [
            "id", "2.0", "set", "get", "seq", "new", "old", "ops", "path", "code", "ping", "kind", "value", "index",
            "error", "prior", "hello", "since", "method", "params", "result", "change", "insert", "remove", "values",
            "jsonrpc", "message", "options", "initial", "context", "indexes", "replace", "progress", "subscribe",
            "subscription",
        ]
        // Each word, its neighbours (one byte more or less, one byte changed), at the end of the input and not.
        for word in words {
            for text in [
                word, String(word.dropLast()), word + "x", "x" + word, String(word.dropFirst()), word.uppercased(),
            ] {
                #expect(try JSONParser.parse("\"\(text)\"") == .string(text))
                #expect(try JSONParser.parse("[\"\(text)\",1]") == [.string(text), 1])
                #expect(try JSONParser.parse("{\"\(text)\":\"\(text)\"}") == .object(JSONObject([text: .string(text)])))
            }
        }
        for length in 0..<40 {
            let plain = String(
                (0..<length).map { position -> Character in
                    let byte = UInt8(0x21 + (position * 7) % 90)
                    return Character(Unicode.Scalar(byte == 0x22 || byte == 0x5C ? 0x41 : byte))
                })
            #expect(try JSONParser.parse("\"\(plain)\"") == .string(plain), "\(length)")
            #expect(try JSONParser.parse("\"\(plain)é\"") == .string(plain + "é"), "\(length)")
            #expect(try JSONParser.parse("\"\(plain)\\n\"") == .string(plain + "\n"), "\(length)")
            #expect(throws: WireError.syntax(offset: length + 1, reason: "control character 0x01 in a string")) {
                try JSONParser.parse(bytes("\"\(plain)") + [0x01, 0x22])
            }
            #expect(throws: WireError.syntax(offset: length + 1, reason: "unterminated string")) {
                try JSONParser.parse("\"\(plain)")
            }
        }
    }

    @Test("short integers and decimals take a fast path to the same numbers", arguments: 0..<4)
    func numbers(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for _ in 0..<3000 {
            let digits = Int.random(in: 1...20, using: &random)
            var text = String(UInt64.random(in: 0...UInt64.max, using: &random)).suffix(digits)
            if text.count > 1 && text.first == "0" { text = "1" + text.dropFirst() }
            var number = String(text)
            if Bool.random(using: &random) && number.count > 1 {
                let point = Int.random(in: 1..<number.count, using: &random)
                number.insert(".", at: number.index(number.startIndex, offsetBy: point))
            }
            if Bool.random(using: &random) { number = "-" + number }
            let expected: JSONValue =
                if !number.contains("."), let integer = Int64(number) {
                    .int(integer)
                } else {
                    .double(Double(number)!)
                }
            for wire in [number, "[\(number)]", "[\(number),1]", "{\"a\":\(number)}"] {
                let parsed = try JSONParser.parse(wire)
                let value =
                    switch parsed {
                    case .array(let elements): elements[0]
                    case .object(let object): object["a"]!
                    default: parsed
                    }
                #expect(identical(value, expected), "\(wire)")
            }
        }
        for (text, expected) in [
            ("-0.0", JSONValue.double(-0.0)), ("0.5", 0.5), ("-0.000", .double(-0.0)), ("0", 0), ("-0", 0),
            ("123456789012345.6", 123456789012345.6), ("1234567890123456.7", 1234567890123456.7),
            ("0.1e1", 1.0), ("1.5E+2", 150.0),
        ] {
            #expect(identical(try JSONParser.parse(text), expected), "\(text)")
        }
        for text in ["01.5", "1.", "1.e5", "-.5", "1.5e", "-01"] {
            #expect(throws: WireError.self, "\(text)") { try JSONParser.parse(text) }
        }
    }
}
