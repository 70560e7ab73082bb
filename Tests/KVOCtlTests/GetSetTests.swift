// `kvoctl get`, `set`, `ping` and `hello` against a live kvod: JSON values and the string fallback round-trip, and
// a nested path creates its objects.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl get and set")
struct GetSetTests {
    @Test(
        "set VALUE then get prints it back",
        arguments: [
            ("name", "Alice", JSONValue.string("Alice")),
            ("greeting", "hello world", .string("hello world")),
            ("count", "42", .int(42)),
            ("negative", "-7", .int(-7)),
            ("ratio", "2.5", .double(2.5)),
            ("flag", "true", .bool(true)),
            ("nothing", "null", .null),
            ("quoted", #""42""#, .string("42")),
            ("list", #"[1,"two",null,[3]]"#, .array([1, "two", .null, [3]])),
            ("unicode", "héllo ✓", .string("héllo ✓")),
        ])
    func roundTrip(path: String, argument: String, expected: JSONValue) throws {
        try withKVOD { server in
            let set = try CLI.run(["set", path, argument], on: server)
            #expect(set.status == 0, "\(set)")
            #expect(try parseJSON(set.stdout)["seq"]?.intValue != nil)
            let get = try CLI.run(["get", path], on: server)
            #expect(get.status == 0, "\(get)")
            #expect(get.stdoutLines.count == 1)
            #expect(try parseJSON(get.stdout) == expected)
        }
    }

    @Test func objectValueRoundTrips() throws {
        try withKVOD { server in
            let set = try CLI.run(["set", "person", #"{"name":"Ann","address":{"city":"Paris"}}"#], on: server)
            #expect(set.status == 0, "\(set)")
            let get = try CLI.run(["get", "person"], on: server)
            #expect(withoutObjectIDs(try parseJSON(get.stdout)) == .json(#"{"name":"Ann","address":{"city":"Paris"}}"#))
            #expect(try CLI.run(["get", "person.address.city"], on: server).stdout == "\"Paris\"\n")
        }
    }

    @Test func nestedPathCreatesIntermediateObjects() throws {
        try withKVOD { server in
            #expect(try CLI.run(["set", "a.b.c", "1"], on: server).status == 0)
            #expect(try CLI.run(["get", "a.b.c"], on: server).stdout == "1\n")
            let parent = try CLI.run(["get", "a"], on: server)
            #expect(withoutObjectIDs(try parseJSON(parent.stdout)) == .json(#"{"b":{"c":1}}"#))
        }
    }

    @Test func stringFlagKeepsJSONLookingText() throws {
        try withKVOD { server in
            let set = try CLI.run(["set", "--string", "zip", "42"], on: server)
            #expect(set.status == 0, "\(set)")
            let get = try CLI.run(["get", "zip"], on: server)
            #expect(get.stdout == "\"42\"\n", "\(get)")
        }
    }

    @Test func setPrintsConsecutiveSeqs() throws {
        try withKVOD { server in
            let first = try parseJSON(try CLI.run(["set", "x", "1"], on: server).stdout)
            let second = try parseJSON(try CLI.run(["set", "x", "2"], on: server).stdout)
            let firstSeq = try #require(first["seq"]?.intValue)
            #expect(second == ["seq": .int(firstSeq + 1)])
        }
    }

    @Test func unsetKeyIsNull() throws {
        try withKVOD { server in
            let get = try CLI.run(["get", "never.set"], on: server)
            #expect(get.status == 0, "\(get)")
            #expect(get.stdout == "null\n")
        }
    }

    @Test func pingAndHello() throws {
        try withKVOD { server in
            let ping = try CLI.run(["ping"], on: server)
            #expect(ping.status == 0 && ping.stdout == "pong\n", "\(ping)")
            let hello = try CLI.run(["hello"], on: server)
            let result = try parseJSON(hello.stdout)
            #expect(result["server"] == "kvod")
            #expect(result["protocol"] == 1)
            #expect(result["version"]?.stringValue != nil)
        }
    }
}

extension JSONValue {
    /// Parses JSON text written in a test; traps on invalid text (a bug in the test).
    static func json(_ text: String) -> JSONValue {
        do { return try JSONParser.parse(text) } catch { fatalError("invalid JSON in test: \(text): \(error)") }
    }
}
