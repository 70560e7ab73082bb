// `kvod --busy-poll`: a real kvod keeps its CPU busy only after reads, for the window it was given, then sleeps again;
// it serves and notifies as ever meanwhile. (CPU time is read from /proc, in the kernel's 10 ms ticks, with wide
// margins: this checks that the loop spins and that it stops, not how fast anything is.)
#if os(Linux)
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite struct BusyPollTests {
    /// The user + system CPU seconds of process `pid` so far (`/proc/PID/stat`, fields 14 and 15).
    static func cpuSeconds(_ pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // After the command name's closing parenthesis: field 3 (state) onwards.
        let fields = try #require(stat.split(separator: ")").last).split(separator: " ")
        let ticks = try #require(Double(fields[11])) + #require(Double(fields[12]))
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// The CPU seconds `pid` uses over `seconds` of wall time.
    static func cpuUsed(by pid: Int32, over seconds: Double) throws -> Double {
        let before = try Self.cpuSeconds(pid)
        Thread.sleep(forTimeInterval: seconds)
        return try Self.cpuSeconds(pid) - before
    }

    @Test func theLoopSpinsForTheWindowAfterARequestThenSleepsAndServesAsEver() throws {
        let server = try KVODProcess.start(["--busy-poll", "1000000"])
        defer { _ = server.stop() }
        let pid = server.command.pid
        // No read yet: the loop sleeps.
        #expect(try Self.cpuUsed(by: pid, over: 0.5) < 0.2)

        let watcher = try server.client()
        try watcher.subscribe("greeting", options: ["new"])
        let setter = try server.client()
        let seq = try setter.set("greeting", .string("hello"))
        let notification = try watcher.nextNotification()
        #expect(notification.params["new"] == .string("hello"))
        #expect(notification.params["seq"] == .int(Int64(seq)))

        // While requests keep coming within the 1 s window (a ping every 100 ms here) the loop polls without
        // blocking: it keeps a CPU busy (1.5 s of CPU in 1.5 s on a quiet machine; a busy one still gives it a share).
        let before = try Self.cpuSeconds(pid)
        for _ in 0..<15 {
            try setter.ping()
            Thread.sleep(forTimeInterval: 0.1)
        }
        let spinning = try Self.cpuSeconds(pid) - before
        #expect(spinning >= 0.2, "kvod used \(spinning) s of CPU in 1.5 s of a ping every 100 ms")

        // From 1 s after the last read on it sleeps again.
        Thread.sleep(forTimeInterval: 1.2)
        let asleep = try Self.cpuUsed(by: pid, over: 1.0)
        #expect(asleep < 0.15, "kvod used \(asleep) s of CPU in a second with no request, long after the window")
        #expect(try setter.get("greeting") == .string("hello"))
    }

    @Test func withoutTheOptionTheLoopSleepsBetweenRequests() throws {
        let server = try KVODProcess.start()
        defer { _ = server.stop() }
        let client = try server.client()
        try client.set("greeting", .string("hello"))
        let before = try Self.cpuSeconds(server.command.pid)
        for _ in 0..<15 {
            try client.ping()
            Thread.sleep(forTimeInterval: 0.1)
        }
        let used = try Self.cpuSeconds(server.command.pid) - before
        #expect(used < 0.15, "kvod used \(used) s of CPU in 1.5 s of a ping every 100 ms")
    }
}
#endif
