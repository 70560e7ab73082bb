// Conditional writes (Protocol/methods.md#set): modSeqs from `get` with `meta`, `if` on set, collection mutations and
// transaction ops, error 1011 with the current value and modSeq, two writers racing on a read-modify-write without
// losing an update — in process (InProcessServer.swift); modSeqs surviving a restart and kvoctl's flags against a
// live kvod.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@MainActor
@Suite struct ConditionalWriteTests {
    @Test func twoWritersRacingOnModSeqLoseNoUpdate() throws {
        let server = InProcessServer()
        let writers = [server.peer(), server.peer()]
        _ = try writers[0].request(1, "set", #"{"path":"counter","value":0}"#)
        var id = 10
        var increments = 0
        var refusals = 0
        for _ in 0..<25 {
            // Both read, then both try to write what they read plus one, conditioned on what they read.
            let reads = try writers.map { writer in
                id += 1
                return try writer.request(id, "get", #"{"path":"counter","meta":true}"#)["result"]
            }
            for (writer, read) in zip(writers, reads) {
                let value = read?["value"]?.intValue ?? -1
                let modSeq = read?["modSeq"]?.intValue ?? -1
                id += 1
                let response = try writer.request(
                    id, "set", #"{"path":"counter","value":\#(value + 1),"if":{"modSeq":\#(modSeq)}}"#)
                if response["result"] != nil {
                    increments += 1
                } else {
                    #expect(response["error"]?["code"] == 1011, "\(response)")
                    // The refusal carries what the winner stored.
                    #expect(response["error"]?["data"]?["value"] == .int(Int64(value + 1)))
                    #expect(response["error"]?["data"]?["path"] == "counter")
                    refusals += 1
                }
            }
        }
        #expect(increments == 25 && refusals == 25)
        #expect(try writers[1].request(1000, "get", #"{"path":"counter"}"#)["result"]?["value"] == 25)
    }

    @Test func metaConditionsAndAtomicRefusals() throws {
        let server = try InProcessServer(model: InProcessServer.defaultModel())
        let peer = server.peer()
        // modSeq: the seq that last stored the key; null when never set or computed.
        #expect(try peer.request(1, "get", #"{"path":"note","meta":true}"#)["result"] == .json(#"{"value":null,"seq":0,"modSeq":null,"expires":null}"#))
        #expect(try peer.request(2, "get", #"{"path":"person.fullName","meta":true}"#)["result"]?["modSeq"] == .null)
        #expect(try peer.request(3, "set", #"{"path":"note","value":"a","if":{"absent":true}}"#)["result"]?["seq"] == 1)
        #expect(try peer.request(4, "set", #"{"path":"note","value":"b","if":{"absent":true}}"#)["error"]?["code"] == 1011)
        #expect(try peer.request(5, "set", #"{"path":"note","value":"b","if":{"value":"a"}}"#)["result"]?["seq"] == 2)
        #expect(try peer.request(6, "set", #"{"path":"note","value":"c","if":{"modSeq":1}}"#)["error"]?["data"]?["modSeq"] == 2)
        // Numbers compare as JSON does; a collection's modSeq moves with its mutations.
        _ = try peer.request(7, "set", #"{"path":"n","value":1}"#)
        #expect(try peer.request(8, "set", #"{"path":"n","value":2,"if":{"value":1.0}}"#)["result"] != nil)
        _ = try peer.request(9, "insert", #"{"path":"department.employees","value":{"name":"Ada","salary":1}}"#)
        let meta = try peer.request(10, "get", #"{"path":"department.employees","meta":true}"#)["result"]
        #expect(meta?["modSeq"] == meta?["seq"])
        // A refused collection mutation changes nothing and takes no seq.
        let stale = try peer.request(
            11, "insert", #"{"path":"department.employees","value":{"name":"Bo"},"if":{"modSeq":1}}"#)
        #expect(stale["error"]?["code"] == 1011)
        #expect(try peer.request(12, "get", #"{"path":"department.employees.@count"}"#)["result"] == .json(#"{"value":1,"seq":5}"#))
        // In a transaction the first failing condition fails it whole, with data.op.
        let transaction = try peer.request(
            13, "transaction",
            #"{"ops":[{"method":"set","params":{"path":"x","value":1}},{"method":"union","params":{"path":"department.tags","values":["t"],"if":{"value":[]}}},{"method":"set","params":{"path":"note","value":"z","if":{"value":"nope"}}}]}"#)
        #expect(transaction["error"]?["code"] == 1011)
        #expect(transaction["error"]?["data"]?["op"] == 2)
        #expect(transaction["error"]?["data"]?["value"] == "b")
        #expect(try peer.request(14, "get", #"{"path":"x"}"#)["result"] == .json(#"{"value":null,"seq":5}"#))
        // Bad conditions are invalid params.
        for (index, condition) in [#"{"modSeq":-1}"#, #"{"absent":false}"#, #"{"modSeq":1,"absent":true}"#, #""x""#, #"{}"#].enumerated() {
            let response = try peer.request(20 + index, "set", #"{"path":"note","value":1,"if":\#(condition)}"#)
            #expect(response["error"]?["code"] == -32602, "\(condition)")
        }
        #expect(try peer.request(30, "get", #"{"path":"note","meta":"yes"}"#)["error"]?["code"] == -32602)
    }
}

/// Conditional writes at the process level: across a restart, and from kvoctl.
@Suite(.serialized) struct ConditionalWriteOverWireTests {
    @Test func modSeqsSurviveARestart() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--snapshot-every", "3"]
        do {
            let server = try KVODProcess.start(arguments)
            let peer = try Peer(server)
            for (index, key) in ["a", "b", "c", "d", "a"].enumerated() {
                _ = try peer.request(index, "set", #"{"path":"\#(key)","value":\#(index)}"#)
            }
            #expect(server.stop() == 0)
        }
        let server = try KVODProcess.start(arguments)
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"a","meta":true}"#)["result"] == .json(#"{"value":4,"seq":5,"modSeq":5,"expires":null}"#))
        #expect(try peer.request(2, "get", #"{"path":"b","meta":true}"#)["result"]?["modSeq"] == 2)
        #expect(try peer.request(3, "set", #"{"path":"b","value":9,"if":{"modSeq":2}}"#)["result"]?["seq"] == 6)
    }

    @Test func kvoctlFlags() throws {
        let server = try KVODProcess.start()
        func kvoctl(_ arguments: [String]) throws -> CommandResult {
            try runCommand(try existingBinaryURL(named: "kvoctl"), server.connectionArguments + arguments, timeout: .seconds(20))
        }
        #expect(try kvoctl(["set", "n", "5"]).status == 0)
        let meta = try kvoctl(["get", "--meta", "n"])
        #expect(meta.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"value":5,"seq":1,"modSeq":1,"expires":null}"#)
        #expect(try kvoctl(["set", "--if-mod-seq", "1", "n", "6"]).status == 0)
        let refused = try kvoctl(["set", "--if-mod-seq", "1", "n", "7"])
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("1011"))
        #expect(try kvoctl(["set", "--if-value", "6", "n", "7"]).status == 0)
        #expect(try kvoctl(["set", "--if-absent", "m", "x"]).status == 0)
        #expect(try kvoctl(["set", "--if-absent", "m", "y"]).status == 2)
        #expect(try kvoctl(["set", "--if-absent", "--if-value", "1", "m", "y"]).status == 64)
        #expect(try kvoctl(["set", "--if-value", "{bad", "m", "y"]).status == 64)
        // --ttl: the key expires (kvod's tick runs every 250 ms), and `get --meta` shows when.
        #expect(try kvoctl(["set", "--ttl", "3600", "presence.ada", "true"]).status == 0)
        let expires = try JSONParser.parse(try kvoctl(["get", "--meta", "presence.ada"]).stdout)["expires"]?.intValue
        #expect((expires ?? 0) > 1_700_000_000_000)
        #expect(try kvoctl(["set", "--ttl", "0.3", "presence.bo", "true"]).status == 0)
        var value: JSONValue?
        for _ in 0..<100 {  // bounded: up to 10 s
            value = try JSONParser.parse(try kvoctl(["get", "presence.bo"]).stdout)
            if value == .null { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        #expect(value == .null)
        #expect(try kvoctl(["set", "--ttl", "0", "n", "1"]).status == 64)
    }
}
