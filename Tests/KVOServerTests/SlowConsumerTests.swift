// A client that subscribes and never reads, among clients that do (Protocol/README.md#slow-consumers): kvod closes
// the slow one (`slow_consumer`) and the others receive every notification, in order, while the setter keeps going.
// No timing is asserted: each wait is bounded only loosely, so a stall fails the test instead of hanging it.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct SlowConsumerTests {
    /// What the reader threads report, behind a lock.
    final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var received: [Int: [Int64]] = [:]
        private var errors: [String] = []
        private var progress: [Int: Int] = [:]
        let done = DispatchSemaphore(value: 0)
        let ready = DispatchSemaphore(value: 0)

        func record(_ values: [Int64], reader: Int) { self.lock.withLock { self.received[reader] = values } }
        func fail(_ message: String) { self.lock.withLock { self.errors.append(message) } }
        func advanced(to count: Int, reader: Int) { self.lock.withLock { self.progress[reader] = count } }
        /// The fewest values any of `readers` has reported, or nil once one of them failed.
        func slowest(of readers: Int) -> Int? {
            self.lock.withLock { self.errors.isEmpty ? (0..<readers).map { self.progress[$0] ?? 0 }.min() : nil }
        }
        var snapshot: (received: [Int: [Int64]], errors: [String]) { self.lock.withLock { (self.received, self.errors) } }
    }

    @Test func aClientThatNeverReadsIsClosedAndTheOthersGetEverything() throws {
        let server = try KVODProcess.start([
            "--output-soft-limit-bytes", "1048576", "--output-soft-limit-seconds", "2",
            "--output-hard-limit-bytes", "16777216",
        ])
        let (host, port) = (server.host, server.port)

        // The slow one: subscribes, then never reads again.
        let slow = try server.client()
        _ = try slow.subscribe("v", options: ["new"])

        // Fast readers, each on its own thread, read until the final value -1.
        let readers = 2
        let results = Results()
        for reader in 0..<readers {
            Thread.detachNewThread {
                do {
                    let client = try KVOClient(host: host, port: port, timeout: .seconds(30))
                    _ = try client.subscribe("v", options: ["new"])
                    results.ready.signal()
                    var values: [Int64] = []
                    while true {
                        let notification = try client.nextNotification(timeout: .some(.seconds(30)))
                        guard notification.method == "change", let value = notification.params["new"]?["i"]?.intValue
                        else { continue }
                        if value == -1 { break }
                        values.append(value)
                        if values.count % 50 == 0 { results.advanced(to: values.count, reader: reader) }
                    }
                    results.record(values, reader: reader)
                } catch {
                    results.fail("reader \(reader): \(error)")
                    results.ready.signal()
                }
                results.done.signal()
            }
        }
        for _ in 0..<readers { #expect(results.ready.wait(timeout: .now() + 30) == .success) }

        // The setter: sets until kvod reports the slow consumer closed (bounded), then a few more, then -1.
        let setter = try server.client(timeout: .seconds(30))
        let padding = JSONValue.string(String(repeating: "x", count: 2048))
        var sets = 0
        var slowClosed = false
        while sets < 40_000 {
            try setter.set("v", ["i": .int(Int64(sets)), "pad": padding])
            sets += 1
            if sets % 250 == 0 {
                // The readers read as fast as this process lets them, which under a sanitizer on a busy machine can
                // be slower than kvod fills their output: keep them within ~300 notifications (600 KB, under the
                // soft limit), bounded, so what is tested is the client that never reads.
                let deadline = Date().addingTimeInterval(30)
                while let slowest = results.slowest(of: readers), slowest < sets - 300, Date() < deadline {
                    Thread.sleep(forTimeInterval: 0.005)
                }
                let closes = try setter.call("stats")["closes"]?["slow_consumer"]?.intValue ?? 0
                if closes >= 1 {
                    slowClosed = true
                    break
                }
            }
        }
        for _ in 0..<500 {
            try setter.set("v", ["i": .int(Int64(sets)), "pad": padding])
            sets += 1
        }
        try setter.set("v", ["i": -1])
        #expect(slowClosed, "kvod did not close the client that never reads (after \(sets) sets)")

        for _ in 0..<readers { #expect(results.done.wait(timeout: .now() + 60) == .success) }
        let (received, errors) = results.snapshot
        #expect(errors.isEmpty, "\(errors)")
        for reader in 0..<readers {
            let values = received[reader] ?? []
            #expect(values.count == sets, "reader \(reader) got \(values.count) of \(sets)")
            #expect(values == (0..<Int64(sets)).map { $0 }, "reader \(reader): out of order or missing values")
        }

        // The slow client finds its connection closed once it reads what the kernel still held.
        var lines = 0
        #expect(throws: KVOClientError.self) {
            while true {
                _ = try slow.connection.readLine(timeout: .seconds(10))
                lines += 1
            }
        }
        #expect(lines < sets, "the slow client cannot have received everything")
        let stats = try setter.call("stats")
        #expect(stats["closes"]?["slow_consumer"] == 1)
        #expect(stats["connections"] == 1, "only the setter is left (the readers are done)")
        #expect(server.waitForLog("slow consumer"))
    }
}
