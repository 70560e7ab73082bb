// Differential check of JSONParser and JSONWriter against Foundation's JSONSerialization (the oracle; tests only):
// on hand-picked and randomly generated documents both must agree on validity and on the values, and Foundation
// must read everything JSONWriter writes. Where Foundation is knowingly lenient, the difference is pinned below.

import Foundation
import Testing
import WireProtocol

struct FoundationDifferentialTests {
    /// Foundation's reading of `wire`, or nil when it rejects it.
    static func foundationParse(_ wire: [UInt8]) -> Any? {
        try? JSONSerialization.jsonObject(with: Data(wire), options: [.fragmentsAllowed])
    }

    /// Nil when `ours` and Foundation's `theirs` mean the same JSON, else where and how they differ. Numbers are
    /// compared numerically; Foundation's Booleans are NSNumbers whose type encoding is "c".
    static func difference(_ ours: JSONValue, _ theirs: Any, at path: String = "$") -> String? {
        switch ours {
        case .null:
            return theirs is NSNull ? nil : "\(path): null vs \(theirs)"
        case .bool(let flag):
            guard let number = theirs as? NSNumber, Self.isBoolean(number), number.boolValue == flag else {
                return "\(path): \(flag) vs \(theirs)"
            }
            return nil
        case .int(let integer):
            guard let number = theirs as? NSNumber, !Self.isBoolean(number) else {
                return "\(path): \(integer) vs \(theirs)"
            }
            let same =
                switch String(cString: number.objCType) {
                case "Q": integer >= 0 && number.uint64Value == UInt64(integer)
                case "d", "f": Self.exactDouble(number) == Double(integer)
                default: number.int64Value == integer
                }
            return same ? nil : "\(path): \(integer) vs \(number)"
        case .double(let double):
            guard let number = theirs as? NSNumber, !Self.isBoolean(number), Self.exactDouble(number) == double else {
                return "\(path): \(double) vs \(theirs)"
            }
            return nil
        case .string(let string):
            return (theirs as? String) == string ? nil : "\(path): \(string.debugDescription) vs \(theirs)"
        case .array(let elements):
            guard let others = theirs as? [Any], others.count == elements.count else {
                return "\(path): array of \(elements.count) vs \(theirs)"
            }
            for (index, element) in elements.enumerated() {
                if let difference = Self.difference(element, others[index], at: "\(path)[\(index)]") {
                    return difference
                }
            }
            return nil
        case .object(let object):
            guard let others = theirs as? [String: Any], others.count == object.count else {
                return "\(path): object of \(object.count) vs \(theirs)"
            }
            for (key, value) in object.members {
                guard let other = others[key] else { return "\(path): missing key \(key.debugDescription)" }
                if let difference = Self.difference(value, other, at: "\(path).\(key)") { return difference }
            }
            return nil
        }
    }

    static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }

    /// The number's value as the nearest Double. Foundation on Linux returns many numbers as NSDecimalNumber, whose
    /// `doubleValue` is not correctly rounded, so its exact decimal text is converted instead.
    static func exactDouble(_ number: NSNumber) -> Double {
        if let decimal = number as? NSDecimalNumber, let value = Double(decimal.stringValue) { return value }
        return number.doubleValue
    }

    static let corpus: [String] = [
        // Valid.
        "null", "true", "false", "0", "-0", "1", "-1", "0.5", "-0.0", "1e2", "1E-2", "1.25e+3", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "18446744073709551616", "1e-400", "2.2250738585072014e-308",
        "5e-324", "1.7976931348623157e308", "0.1", "123456.789", #""""#, #""plain""#, #""\"\\\/\b\f\n\r\t""#,
        #""\u0000\u001f\u00e9\u4e2d""#, #""\ud83d\ude00 \uD834\uDD1E""#, "\"héllo 中文 😀\"", "\"\u{7F}\"",
        "[]", "{}", "[[],{},[[]]]", " [ 1 , 2 , 3 ] ", "\t\r\n{\"a\"\t:\n1}\r\n",
        #"{"jsonrpc":"2.0","id":123,"method":"set","params":{"path":"a.b.c","value":42.5}}"#,
        #"{"a":{"b":{"c":{"d":[1,[2,[3,[4]]]]}}}}"#, #"[1,"two",3.0,true,null,{"six":[6]}]"#, #"{"":""}"#,
        // Invalid.
        "", " ", "[", "]", "{", "}", "[1 2]", "{'a':1}", "{a:1}", "01", "-01", "1.", ".5", "+1", "NaN", "Infinity",
        "1e", "0x10", "tru", "nul", "[1]x", "1 2", #""abc"#, "\"a\u{1}b\"", #""\x41""#, #""\u12""#, #""\ud800""#,
        #""\udc00""#, #""\ud800\u0041""#, "1e400", "-1e400", "[,1]", "[1,,2]", #"{"a"}"#, #"{"a":}"#, "\u{C}1",
    ]

    static let invalidBytes: [[UInt8]] = [
        [0x22, 0xC0, 0xAF, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22],
        [0x22, 0xE2, 0x82, 0x22], [0x22, 0xFF, 0x22], [0x22, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
    ]

    static func compare(_ wire: [UInt8]) {
        let text = String(decoding: wire, as: UTF8.self).debugDescription
        let ours = try? JSONParser.parse(wire)
        let theirs = Self.foundationParse(wire)
        switch (ours, theirs) {
        case (nil, nil): break
        case (let ours?, nil): Issue.record("\(text): we accept (\(ours)), Foundation rejects")
        case (nil, _?): Issue.record("\(text): we reject, Foundation accepts")
        case (let ours?, let theirs?):
            if let difference = Self.difference(ours, theirs) { Issue.record("\(text): \(difference)") }
        }
    }

    @Test("both parsers agree on validity and values of hand-picked documents", arguments: corpus)
    func handPicked(text: String) {
        Self.compare(bytes(text))
    }

    @Test("both parsers reject invalid UTF-8", arguments: invalidBytes)
    func invalidUTF8(wire: [UInt8]) {
        Self.compare(wire)
    }

    @Test("Foundation accepts some non-JSON that we reject", arguments: ["[1,]", #"{"a":1,}"#, "\u{FEFF}1"])
    func knownLeniency(text: String) {
        // JSONSerialization on Linux tolerates trailing commas and a byte order mark; RFC 8259 allows neither.
        #expect(throws: WireError.self) { try JSONParser.parse(text) }
    }

    @Test("both parsers agree on random documents, and Foundation reads what JSONWriter writes", arguments: 0..<6)
    func randomDocuments(seed: UInt64) throws {
        // Foundation drops a U+FEFF that directly follows an escape sequence (it decodes the text between escapes
        // as separate UTF-8 runs and strips a leading byte order mark from each), so keep that scalar out here.
        var random = RandomJSON(seed: 1000 + seed, includesByteOrderMark: false)
        for _ in 0..<50 {
            let value = random.value(depth: 4)
            let wire = JSONWriter.encode(value)
            let text = String(decoding: wire, as: UTF8.self)
            #expect(identical(try JSONParser.parse(wire), value), "\(text)")
            guard let theirs = Self.foundationParse(wire) else {
                Issue.record("Foundation rejects JSONWriter output \(text)")
                continue
            }
            if let difference = Self.difference(value, theirs) { Issue.record("\(text): \(difference)") }
        }
    }

    @Test("we read what Foundation writes", arguments: 0..<4)
    func foundationOutput(seed: UInt64) throws {
        var random = RandomJSON(seed: 2000 + seed, includesByteOrderMark: false)
        for _ in 0..<50 {
            let value = random.container(depth: 4)
            guard let object = Self.foundationParse(JSONWriter.encode(value)) else { continue }
            let theirWire = [UInt8](try JSONSerialization.data(withJSONObject: object, options: [.fragmentsAllowed]))
            let reparsed = try JSONParser.parse(theirWire)
            if let difference = Self.difference(reparsed, object) {
                Issue.record("\(String(decoding: theirWire, as: UTF8.self)): \(difference)")
            }
        }
    }
}
