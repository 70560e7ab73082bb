// RPCMessage.decodePlainSet: the `set` read straight off the line must mean exactly what RPCMessage.decode reads from
// the same line, and must leave every other line (other spellings, errors, cut lines) to decode.

import Testing
import WireProtocol

struct RPCPlainSetTests {
    /// What `decodePlainSet` read, copied out while the line is alive (its `path` points into the line).
    struct Read {
        let id: Int64
        let path: [UInt8]
        let value: JSONValue
        let request: RPCRequest
        let paramsText: [UInt8]
    }

    static func plainSet(_ text: String, maxDepth: Int = 64) -> Read? {
        bytes(text).withUnsafeBytes { line in
            RPCMessage.decodePlainSet(line, maxDepth: maxDepth).map {
                Read(id: $0.id, path: Array($0.path), value: $0.value, request: $0.request, paramsText: Array($0.paramsText))
            }
        }
    }

    /// `decodePlainSet`'s reading of `text` as the general request, or nil.
    static func plainRequest(_ text: String, maxDepth: Int = 64) -> RPCRequest? {
        Self.plainSet(text, maxDepth: maxDepth)?.request
    }

    static func line(id: String = "7", path: String = "bench.value", value: String) -> String {
        #"{"jsonrpc":"2.0","id":"# + id + #","method":"set","params":{"path":""# + path + #"","value":"# + value
            + "}}"
    }

    @Test(
        "a plain set is the request decode reads",
        arguments: [
            line(value: "42"), line(value: "-42"), line(value: "0"), line(value: "4.25"), line(value: "1e3"),
            line(value: "true"), line(value: "false"), line(value: "null"), line(value: #""text""#),
            line(value: #""with \"escapes\" \u00e9 and é""#), line(value: "[1,[2,{}],\"x\"]"),
            line(value: #"{"name":"x","n":1,"tags":["a","b"]}"#), line(value: #"{"$ref":3}"#),
            line(value: " 42"), line(value: "123456789012345678901234567890"),
            line(id: "0", value: "1"), line(id: "-0", value: "1"), line(id: "-5", value: "1"),
            line(id: "999999999999999999", value: "1"), line(path: "", value: "1"), line(path: "a", value: "1"),
            line(path: "$12.x", value: "1"), line(path: "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p", value: "1"),
            line(path: "@count", value: "1"), line(value: "1") + "  \r", line(value: "1") + "\t",
        ])
    func sameAsDecode(text: String) throws {
        let plain = try #require(Self.plainSet(text))
        #expect(RPCMessage.decode(bytes(text)) == .single(.request(plain.request)))
        #expect(plain.request.method == "set")
        guard case .object(let params)? = plain.request.params else { throw PlainSetTestError.notAnObject }
        #expect(params.keys == ["path", "value"])
        // The journal writes these params as its record of the set: the same text as the general request's.
        guard case .single(.request(let decoded)) = RPCMessage.decode(bytes(text)), let decodedParams = decoded.params
        else { throw PlainSetTestError.notAnObject }
        var journaled: [UInt8] = []
        var general: [UInt8] = []
        JSONWriter.append(.object(params), to: &journaled)
        JSONWriter.append(decodedParams, to: &general)
        #expect(journaled == general)
        // A journal keeps the params' text as the client sent it: exactly the params object of the line, which the
        // general reader reads back as the same params.
        #expect(plain.paramsText.first == UInt8(ascii: "{") && plain.paramsText.last == UInt8(ascii: "}"))
        #expect(String(decoding: plain.paramsText, as: UTF8.self).hasPrefix(#"{"path":""#))
        #expect(try JSONParser.parse(plain.paramsText) == decodedParams)
    }

    @Test("the parts, read off the line")
    func parts() throws {
        let plain = try #require(Self.plainSet(Self.line(id: "-12", path: "a.b", value: #""v""#)))
        #expect(plain.id == -12)
        #expect(plain.path == Array("a.b".utf8))
        #expect(plain.value == .string("v"))
        #expect(plain.paramsText == Array(#"{"path":"a.b","value":"v"}"#.utf8))
        // A value written with spaces keeps them: the text is the client's, not a re-encoding.
        let spaced = try #require(Self.plainSet(Self.line(value: #" [1, {"a" : 2}]"#)))
        #expect(String(decoding: spaced.paramsText, as: UTF8.self) == #"{"path":"bench.value","value": [1, {"a" : 2}]}"#)
    }

    @Test(
        "anything else is left to decode",
        arguments: [
            // Other spellings of the same request.
            #"{"jsonrpc": "2.0","id":7,"method":"set","params":{"path":"a","value":1}}"#,
            #" {"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1}}"#,
            #"{"id":7,"jsonrpc":"2.0","method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"value":1,"path":"a"}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1} }"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1 }}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"\u0061","value":1}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"é","value":1}}"#,
            #"{"jsonrpc":"2.0","id":"7","method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":7.0,"method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":7e0,"method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":null,"method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":1234567890123456789,"method":"set","params":{"path":"a","value":1}}"#,
            // Other requests.
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1,"if":{"seq":1}}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1,"ttl":5}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a"}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":["a",1]}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"get","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1},"x":1}"#,
            #"{"jsonrpc":"2.0","method":"set","params":{"path":"a","value":1}}"#,
            // Errors, which decode reports.
            #"{"jsonrpc":"2.0","id":01,"method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":-,"method":"set","params":{"path":"a","value":1}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":[1,}}"#,
            // A zero byte, which the journal (which keeps a plain set's params text) reads as the end of its records.
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"set\",\"params\":{\"path\":\"a\",\"value\":\"x\u{0}y\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"set\",\"params\":{\"path\":\"a\",\"value\":\u{0}1}}",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"set\",\"params\":{\"path\":\"a\u{0}\",\"value\":1}}",
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1e999}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":tru}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1}}}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1}}x"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a","value":1}"#,
            #"{"jsonrpc":"2.0","id":7,"method":"set","params":{"path":"a"b","value":1}}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"set\",\"params\":{\"path\":\"a\tb\",\"value\":1}}",
            "", "{}", "[]",
        ])
    func leftToDecode(text: String) {
        #expect(Self.plainSet(text) == nil)
    }

    @Test("invalid UTF-8 in the value is left to decode, which rejects it")
    func invalidUTF8() {
        var line = bytes(Self.line(value: #""ab""#))
        line[line.count - 4] = 0xFF
        #expect(line.withUnsafeBytes { RPCMessage.decodePlainSet($0) } == nil)
        guard case .parseError = RPCMessage.decode(line) else {
            Issue.record("decode accepted invalid UTF-8")
            return
        }
    }

    @Test("nesting is limited as decode limits it")
    func depth() {
        let nested = Self.line(value: "[[1]]")
        // The value is two objects deep; its arrays make four levels.
        #expect(Self.plainSet(nested, maxDepth: 4) != nil)
        #expect(Self.plainSet(nested, maxDepth: 3) == nil)
        guard case .parseError = RPCMessage.decode(bytes(nested), maxDepth: 3) else {
            Issue.record("decode accepted a value nested too deep")
            return
        }
        #expect(Self.plainSet(Self.line(value: "1"), maxDepth: 2) != nil)
        #expect(Self.plainSet(Self.line(value: "1"), maxDepth: 1) == nil)
    }

    @Test("every proper prefix of a plain set is left to decode")
    func prefixes() {
        let line = bytes(Self.line(id: "12345", path: "a.long.path.of.some.length", value: #"{"x":[1,2.5,"y"]}"#))
        for cut in 0..<line.count {
            // A copy of exactly the prefix: reading past it would be caught by the sanitizers.
            let prefix = Array(line[..<cut])
            #expect(prefix.withUnsafeBytes { RPCMessage.decodePlainSet($0) } == nil, "cut at \(cut)")
        }
    }

    @Test("random values and random damage: a plain set always means what decode reads", arguments: 0..<8)
    func randomLines(seed: UInt64) {
        var random = RandomJSON(seed: seed)
        for _ in 0..<300 {
            var value: [UInt8] = []
            JSONWriter.append(random.value(depth: 3), to: &value)
            var line = bytes(Self.line(id: String(random.int() % 1_000_000), path: "p.q"))
            line.replaceSubrange((line.count - 2)..<(line.count - 2), with: value)
            // Damage some lines: a byte changed, dropped or repeated.
            if Bool.random(using: &random.generator) {
                let position = Int.random(in: 0..<line.count, using: &random.generator)
                switch Int.random(in: 0..<3, using: &random.generator) {
                case 0: line[position] = UInt8.random(in: 0...255, using: &random.generator)
                case 1: line.remove(at: position)
                default: line.insert(line[position], at: position)
                }
            }
            guard let request = line.withUnsafeBytes({ RPCMessage.decodePlainSet($0)?.request }) else { continue }
            #expect(RPCMessage.decode(line) == .single(.request(request)), "\(String(decoding: line, as: UTF8.self))")
        }
    }

    private static func line(id: String, path: String) -> String {
        #"{"jsonrpc":"2.0","id":"# + id + #","method":"set","params":{"path":""# + path + #"","value":}}"#
    }
}

private enum PlainSetTestError: Error {
    case notAnObject
}
