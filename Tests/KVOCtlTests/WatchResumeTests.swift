// `kvoctl watch --since`: replay of what was missed, then live; the resume hint printed when interrupted; and a
// watch that waits for a restarting kvod (SIGTERM, then SIGKILL) and resumes with nothing missed or repeated.

import Foundation
import TestSupport
import Testing
import WireProtocol

@Suite("kvoctl watch --since", .serialized)
struct WatchResumeTests {
    @Test func resumesFromASeqAndPrintsWhereToResumeWhenInterrupted() throws {
        try withKVOD { server in
            // Someone watched x, so kvod keeps its history; then x changed three times.
            let first = try CLI.start(["watch", "x", "--count", "1"], on: server)
            try waitForSubscription(on: server, path: "x")
            for value in 1...3 { #expect(try CLI.run(["set", "x", "\(value)"], on: server).status == 0) }
            _ = try first.waitForExit(timeout: .seconds(10))
            let resumed = try CLI.run(["watch", "x", "--since", "1", "--old", "--new", "--count", "2"], on: server)
            #expect(resumed.status == 0, "\(resumed)")
            let lines = try resumed.stdoutLines.map { try parseJSON($0) }
            #expect(lines.map { $0["seq"] } == [2, 3])
            #expect(lines.map { $0["new"] } == [2, 3])
            #expect(lines.map { $0["old"] } == [1, 2])
            // Interrupted, watch says where to resume.
            let watch = try CLI.start(["watch", "x"], on: server)
            try waitForSubscription(on: server, path: "x")
            #expect(try CLI.run(["set", "x", "4"], on: server).status == 0)
            #expect(watch.stdout.wait(timeout: .seconds(10)) { $0.contains("\"seq\":4") })
            watch.send(signal: SIGINT)
            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 130)
            #expect(result.stderr.contains("resume with --since 4"), "\(result)")
            // Too old: the server's 1010 comes out as a server error.
            let tooOld = try CLI.run(["watch", "never", "--since", "1", "--count", "1"], on: server)
            #expect(tooOld.status == 2)
            #expect(tooOld.stderr.contains("1010"))
        }
    }

    @Test func waitsForARestartingKVODAndResumes() throws {
        let directory = NSTemporaryDirectory() + "kvod-watch-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always"]
        var server = try KVODProcess.start(arguments)
        let listen = ["--host", "127.0.0.1", "--port", String(server.port)]  // the same port after each restart
        let watch = try CLI.start(["watch", "x", "--failover-wait", "20", "--count", "6"], on: server)
        try waitForSubscription(on: server, path: "x")
        #expect(try CLI.run(["set", "x", "1"], on: server).status == 0)
        #expect(watch.stdout.wait(timeout: .seconds(10)) { $0.contains("\"seq\":1") })
        for (signal, values) in [(SIGTERM, [2, 3]), (SIGKILL, [4, 5, 6])] {
            server.command.send(signal: signal)
            _ = server.command.waitForExitStatus(timeout: .seconds(10))
            // Written while the watch is away: the history on disk replays it.
            server = try KVODProcess.start(arguments, listenArguments: listen)
            for value in values { #expect(try CLI.run(["set", "x", "\(value)"], on: server).status == 0) }
            // The watch resumes on this kvod before it goes away in turn: otherwise it would resume once, later.
            let last = values[values.count - 1]
            #expect(watch.stdout.wait(timeout: .seconds(25)) { $0.contains("\"seq\":\(last)") })
        }
        let result = try watch.waitForExit(timeout: .seconds(30))
        #expect(result.status == 0, "\(result)")
        let lines = try result.stdoutLines.map { try parseJSON($0) }
        #expect(lines.map { $0["new"] } == [1, 2, 3, 4, 5, 6], "\(result)")
        #expect(lines.map { $0["seq"] } == [1, 2, 3, 4, 5, 6])
        #expect(result.stderr.contains("waiting up to 20 s for kvod to come back"), "\(result.stderr)")
        #expect(result.stderr.contains("resuming after seq 1"), "\(result.stderr)")
        #expect(result.stderr.contains("resuming after seq 3"), "\(result.stderr)")
        server.stop()
    }
}
