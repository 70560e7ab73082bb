// `kvoctl watch --since`: replay of what was missed, then live; and the resume hint printed when interrupted.

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
}
