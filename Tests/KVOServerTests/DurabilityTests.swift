// Durability with real processes: restart recovery under each fsync policy, SIGKILL under load with `always` losing
// no acknowledged mutation, a torn journal tail dropped with a log line, damage refusing to load, the lock.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct DurabilityTests {
    static func scratch() -> String {
        let path = NSTemporaryDirectory() + "kvod-data-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("restart finds everything", arguments: ["always", "everysec", "no"])
    func restartRecovery(policy: String) throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", policy, "--snapshot-every", "7"]
        do {
            let server = try KVODProcess.start(arguments, defaultModel: true)
            let peer = try Peer(server)
            _ = try peer.request(1, "set", #"{"path":"labColor.lComponent","value":70}"#)
            for index in 0..<10 {
                _ = try peer.request(10 + index, "insert", #"{"path":"department.employees","value":{"name":"E\#(index)","salary":\#(index)}}"#)
            }
            _ = try peer.request(30, "transaction", #"{"ops":[{"method":"set","params":{"path":"note","value":"hi"}},{"method":"union","params":{"path":"department.tags","values":["x"]}}]}"#)
            _ = try peer.request(31, "remove", #"{"path":"department.employees","index":0}"#)
            #expect(server.stop() == 0)
        }
        let server = try KVODProcess.start(arguments, defaultModel: true)
        let peer = try Peer(server)
        #expect(try peer.request(1, "get", #"{"path":"labColor.lComponent"}"#)["result"]?["value"] == 70.0)
        #expect(try peer.request(2, "get", #"{"path":"department.totalSalary"}"#)["result"]?["value"] == 45.0)
        #expect(try peer.request(3, "get", #"{"path":"department.tags"}"#)["result"]?["value"] == .json(#"["x"]"#))
        #expect(try peer.request(4, "get", #"{"path":"note"}"#)["result"] == .json(#"{"value":"hi","seq":13}"#))
        // seq resumes where it stopped.
        #expect(try peer.request(5, "set", #"{"path":"note","value":"again"}"#)["result"]?["seq"] == 14)
        #expect(server.waitForLog("data loaded"))
    }

    @Test func sigkillUnderLoadLosesNoAcknowledgedMutation() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always", "--snapshot-every", "500"]
        let server = try KVODProcess.start(arguments)
        // Four pipelining writers; each records the seqs the server acknowledged.
        let writers = try (0..<4).map { _ in try server.client() }
        var acknowledged: [(key: String, value: Int, seq: Int64)] = []
        var sent = 0
        for round in 0..<300 {
            for (index, writer) in writers.enumerated() {
                try writer.sendRaw(Peer.requestText(round, "set", #"{"path":"w\#(index).k\#(round)","value":\#(round)}"#))
                sent += 1
            }
            if round == 150 {
                // Kill mid-stream, with requests in flight.
                server.command.send(signal: SIGKILL)
            }
            if round >= 150 { break }
            for (index, writer) in writers.enumerated() {
                let line = try JSONParser.parse(try writer.readRawLine())
                if let seq = line["result"]?["seq"]?.intValue { acknowledged.append(("w\(index).k\(round)", round, seq)) }
            }
        }
        // Read whatever acknowledgements made it out before the kill.
        for (index, writer) in writers.enumerated() {
            while let text = try? writer.readRawLine(timeout: .milliseconds(300)),
                let line = try? JSONParser.parse(text), let seq = line["result"]?["seq"]?.intValue,
                case .int(let id)? = line["id"]
            {
                acknowledged.append(("w\(index).k\(id)", Int(id), seq))
            }
        }
        #expect(server.command.waitForExitStatus(timeout: .seconds(5)) != nil)
        #expect(acknowledged.count >= 4 * 150)
        let restarted = try KVODProcess.start(arguments)
        let reader = try restarted.client()
        for entry in acknowledged {
            #expect(try reader.get(entry.key) == .int(Int64(entry.value)), "acknowledged seq \(entry.seq) lost")
        }
        let seq = try reader.getWithSeq("w0.k0").seq
        #expect(seq >= UInt64(acknowledged.map(\.seq).max() ?? 0))
        _ = sent
    }

    @Test func aTornTailIsDroppedWithALogLineAndDamageStopsKvod() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always", "--snapshot-every", "0"]
        do {
            let server = try KVODProcess.start(arguments)
            let peer = try Peer(server)
            for index in 1...3 { _ = try peer.request(index, "set", #"{"path":"k\#(index)","value":\#(index)}"#) }
            server.command.send(signal: SIGKILL)
            _ = server.command.waitForExitStatus(timeout: .seconds(5))
        }
        let journal = URL(fileURLWithPath: directory + "/journal.log")
        var bytes = try [UInt8](Data(contentsOf: journal))
        let intact = bytes
        bytes += Array(#"1234abcd {"seq":4,"method":"set","par"#.utf8)  // a write cut short by power loss
        try Data(bytes).write(to: journal)
        do {
            let server = try KVODProcess.start(arguments)
            let peer = try Peer(server)
            #expect(try peer.request(1, "get", #"{"path":"k3"}"#)["result"] == .json(#"{"value":3,"seq":3}"#))
            #expect(server.waitForLog("torn"))
            server.command.send(signal: SIGKILL)
            _ = server.command.waitForExitStatus(timeout: .seconds(5))
        }
        // Damage in the middle: kvod refuses to start and says why.
        var damaged = intact
        damaged[20] = damaged[20] == UInt8(ascii: "x") ? UInt8(ascii: "y") : UInt8(ascii: "x")
        try Data(damaged).write(to: journal)
        let result = try runCommand(binaryURL(named: "kvod"), ["--empty", "--port", "0"] + arguments, timeout: .seconds(10))
        #expect(result.status != 0)
        #expect(result.stderr.contains("journal.log") && result.stderr.contains("damaged"))
    }

    @Test func aSecondKvodCannotUseTheSameDirectory() throws {
        let directory = Self.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try KVODProcess.start(["--data-dir", directory])
        let result = try runCommand(binaryURL(named: "kvod"), ["--empty", "--port", "0", "--data-dir", directory], timeout: .seconds(10))
        #expect(result.status != 0)
        #expect(result.stderr.contains("locked"))
        #expect(server.stop() == 0)
    }

    @Test func withoutADataDirectoryKvodSaysItRunsInMemory() throws {
        let server = try KVODProcess.start()
        #expect(server.stop() == 0)
        #expect(server.stderrText.contains("in memory"))
    }
}
