// `kvoctl -` against a live kvod: command lines and raw JSON-RPC lines mixed, every server line echoed, the
// response owed to each request awaited, and the exit status reflecting error responses and bad lines.

import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl -")
struct ScriptTests {
    @Test func mixesCommandsAndRawLines() throws {
        try withKVOD { server in
            let script = """
                # a comment, then a blank line

                set person.name Alice
                {"jsonrpc":"2.0","id":"raw-1","method":"get","params":{"path":"person.name"}}
                ping
                subscribe person.name new initial context={"from":"script"}
                {"jsonrpc":"2.0","method":"set","params":{"path":"x","value":[1,2]}}
                get x
                set person.name Bob Smith
                """
            let result = try CLI.run(["-"], on: server, stdin: script)
            #expect(result.status == 0, "\(result)")
            let messages = try result.stdoutLines.map { try parseJSON($0) }
            let byID = { (id: JSONValue) in messages.first { $0["id"] == id } }

            #expect(byID(1)?["result"]?["seq"]?.intValue != nil, "\(result)")
            #expect(byID("raw-1")?["result"]?["value"] == "Alice")
            #expect(byID(2)?["result"] == "pong")
            let subscription = try #require(byID(3)?["result"]?["subscription"], "\(result)")
            #expect(byID(4)?["result"]?["value"] == [1, 2], "the raw notification was processed before get x")
            #expect(byID(5)?["result"]?["seq"]?.intValue != nil)
            let responses = messages.filter { $0["id"] != nil }
            #expect(responses.count == 6, "one response per request, none for the raw notification")

            // The subscribe response comes first, then its initial notification; the later set notifies too.
            let subscribeIndex = try #require(messages.firstIndex { $0["id"] == 3 })
            let initial = messages[subscribeIndex + 1]
            #expect(initial["method"] == "change")
            #expect(initial["params"]?["initial"] == true)
            #expect(initial["params"]?["new"] == "Alice")
            #expect(initial["params"]?["context"] == ["from": "script"])
            let change = try #require(messages.first { $0["params"]?["new"] == "Bob Smith" }, "\(result)")
            #expect(change["params"]?["subscription"] == subscription)
            #expect(change["params"]?["seq"] == byID(5)?["result"]?["seq"])
        }
    }

    @Test func batchesGetOneResponseLine() throws {
        try withKVOD { server in
            let ping = #"{"jsonrpc":"2.0","method":"ping"}"#
            let script = """
                [{"jsonrpc":"2.0","id":1,"method":"ping"},\(ping),{"jsonrpc":"2.0","id":2,"method":"ping"}]
                [\(ping)]
                ping
                """
            let result = try CLI.run(["-"], on: server, stdin: script)
            #expect(result.status == 0, "\(result)")
            #expect(result.stdoutLines.count == 2, "\(result)")
            #expect(try parseJSON(result.stdoutLines[0]).arrayValue?.count == 2)
        }
    }

    @Test func errorResponseGivesStatus2() throws {
        try withKVOD { server in
            let result = try CLI.run(["-"], on: server, stdin: "set n 5\nget n.x\nping\n")
            #expect(result.status == 2, "\(result)")
            let messages = try result.stdoutLines.map { try parseJSON($0) }
            #expect(messages.count == 3)
            #expect(messages.first { $0["id"] == 2 }?["error"]?["code"] == 1005)
            #expect(messages.first { $0["id"] == 3 }?["result"] == "pong")
        }
    }

    @Test func invalidJSONLineIsAnsweredAndGivesStatus2() throws {
        try withKVOD { server in
            let result = try CLI.run(["-"], on: server, stdin: "{oops\nping\n")
            #expect(result.status == 2, "\(result)")
            let messages = try result.stdoutLines.map { try parseJSON($0) }
            #expect(messages.first?["error"]?["code"] == -32700)
            #expect(messages.first?["id"] == .null)
            #expect(messages.last?["result"] == "pong")
        }
    }

    @Test func unknownCommandIsReportedSkippedAndGivesStatus64() throws {
        try withKVOD { server in
            let result = try CLI.run(["-"], on: server, stdin: "bogus command\nset k 1\n")
            #expect(result.status == 64, "\(result)")
            #expect(result.stderr.contains("kvoctl: line 1: unknown command 'bogus'"), "\(result)")
            #expect(try CLI.run(["get", "k"], on: server).stdout == "1\n", "the other lines still ran")
        }
    }

    @Test func emptyInputExitsZero() throws {
        try withKVOD { server in
            let result = try CLI.run(["-"], on: server, stdin: "")
            #expect(result.status == 0 && result.stdout.isEmpty, "\(result)")
        }
    }
}
