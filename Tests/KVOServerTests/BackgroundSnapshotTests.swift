// Background snapshots with real kvod processes: a snapshot taken while mutations continue holds exactly the graph at
// its seq (checked against a model of every acknowledged mutation, read back with `kvod --dump-snapshot` beside the
// running server), and SIGKILL at any moment of a background snapshot under load with `--fsync always` loses no
// acknowledged mutation (the restart also proves an orphaned snapshot process holds neither the lock nor the port), and
// a snapshot process dies with its kvod, so the file of a killed kvod's snapshot is never put in place; it runs only on
// the CPUs of `--snapshot-cpus`, and kvod names at start those the kernel refuses.
import Foundation
import KVOClient
import TestSupport
import Testing
import WireProtocol

@Suite(.serialized) struct BackgroundSnapshotTests {
    /// Sets `count` keys `p0…` pipelined, `window` requests in flight; returns the last seq.
    @discardableResult
    static func preload(_ client: KVOClient, count: Int, window: Int = 500) throws -> Int64 {
        var seq: Int64 = 0
        for start in stride(from: 0, to: count, by: window) {
            let end = min(start + window, count)
            for index in start..<end {
                try client.sendRaw(Peer.requestText(index, "set", #"{"path":"p\#(index)","value":"preloaded value \#(index)"}"#))
            }
            for _ in start..<end {
                let line = try JSONParser.parse(try client.readRawLine())
                guard let acknowledged = line["result"]?["seq"]?.intValue else {
                    Issue.record("preload refused: \(line)")
                    return seq
                }
                seq = max(seq, acknowledged)
            }
        }
        return seq
    }

    /// The values of the `m` keys after every acknowledged mutation up to `seq`.
    static func model(_ history: [(seq: Int64, key: String, value: JSONValue)], at seq: Int64) -> [String: JSONValue] {
        var state: [String: JSONValue] = [:]
        for entry in history where entry.seq <= seq { state[entry.key] = entry.value }
        return state
    }

    static func value(_ round: Int, _ key: Int) -> String {
        switch (round + key) % 4 {
        case 0: "\(round * 1000 + key)"
        case 1: "\"text \(round)-\(key)\""
        case 2: "[\(round),\(key),\"x\"]"
        default: "null"
        }
    }

    @Test func aSnapshotTakenWhileMutationsContinueHoldsExactlyTheGraphAtItsSeq() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try KVODProcess.start(["--data-dir", directory, "--fsync", "no", "--snapshot-every", "300"])
        let writer = try server.client()
        let preloaded = try Self.preload(writer, count: 30_000)
        var history: [(seq: Int64, key: String, value: JSONValue)] = []
        var checkedSeqs = Set<Int64>()
        let kvod = try existingBinaryURL(named: "kvod")
        // At least 120 rounds; more (up to 1,200) while fewer than two snapshots were checked: the snapshot process runs
        // at nice 19, and on a machine busy with other work it can take a while.
        var round = -1
        while round < 1_199 && (round < 119 || checkedSeqs.count < 2) {
            round += 1
            // 50 sets in flight over 64 keys, then their acknowledgements.
            let keys = (0..<50).map { ($0 * 7 + round * 13) % 64 }
            for (index, key) in keys.enumerated() {
                try writer.sendRaw(Peer.requestText(index, "set", #"{"path":"m\#(key)","value":\#(Self.value(round, key))}"#))
            }
            for (index, key) in keys.enumerated() {
                let line = try JSONParser.parse(try writer.readRawLine())
                #expect(line["id"] == .int(Int64(index)))
                guard let seq = line["result"]?["seq"]?.intValue else {
                    Issue.record("set refused: \(line)")
                    return
                }
                history.append((seq, "m\(key)", try JSONParser.parse(Self.value(round, key))))
            }
            guard round % 6 == 5 else { continue }
            // Read whatever snapshot is in place now, beside the running server, and hold it against the model.
            let dump = try runCommand(kvod, ["--dump-snapshot", directory], timeout: .seconds(20))
            #expect(dump.status == 0, "\(dump)")
            let snapshot = try JSONParser.parse(dump.stdout)
            guard let seq = snapshot["seq"]?.intValue, case .array(let objects)? = snapshot["objects"],
                let root = objects.first(where: { $0["id"] == .int(0) }), case .object(let keys)? = root["keys"]
            else {
                Issue.record("not a snapshot: \(dump.stdout.prefix(200))")
                return
            }
            guard seq > preloaded else { continue }
            checkedSeqs.insert(seq)
            let expected = Self.model(history, at: seq)
            let stored = keys.members.filter { $0.0.hasPrefix("m") }
            #expect(stored.count == expected.count, "snapshot at seq \(seq)")
            for (key, value) in stored { #expect(expected[key] == value, "snapshot at seq \(seq), key \(key)") }
            #expect(keys.keys.count - stored.count == 30_000, "the preloaded keys, at seq \(seq)")
        }
        // Several snapshots were taken in the middle of the writes, each exactly the graph at its seq.
        #expect(checkedSeqs.count >= 2, "snapshots checked at seqs \(checkedSeqs.sorted())")
        #expect(server.stop(grace: .seconds(60)) == 0)
        #expect(server.stderrText.contains("mode=background"))
    }

    @Test func sigkillDuringBackgroundSnapshotsLosesNoAcknowledgedMutation() throws {
        var killedMidSnapshot = 0
        var iteration = 0
        // Until a kill has landed while a snapshot process was running (a rolled journal segment or the child's file
        // is on disk), at least twice and at most six times.
        while iteration < 6 && (iteration < 2 || killedMidSnapshot == 0) {
            iteration += 1
            let directory = DurabilityTests.scratch()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let arguments = ["--data-dir", directory, "--fsync", "always", "--snapshot-every", "200"]
            let server = try KVODProcess.start(arguments)
            try Self.preload(try server.client(), count: 20_000)
            let writers = try (0..<4).map { _ in try server.client() }
            var acknowledged: [String: (value: Int, seq: Int64)] = [:]
            let killRound = Int.random(in: 5...80)
            for round in 0...killRound {
                for (index, writer) in writers.enumerated() {
                    for slot in 0..<8 {
                        try writer.sendRaw(
                            Peer.requestText(round * 8 + slot, "set", #"{"path":"w\#(index).k\#(slot)","value":\#(round)}"#))
                    }
                }
                if round == killRound {
                    server.command.send(signal: SIGKILL)
                    break
                }
                for (index, writer) in writers.enumerated() {
                    for slot in 0..<8 {
                        let line = try JSONParser.parse(try writer.readRawLine())
                        if let seq = line["result"]?["seq"]?.intValue { acknowledged["w\(index).k\(slot)"] = (round, seq) }
                    }
                }
            }
            // Acknowledgements that left before the kill count too.
            for (index, writer) in writers.enumerated() {
                while let text = try? writer.readRawLine(timeout: .milliseconds(300)),
                    let line = try? JSONParser.parse(text), let seq = line["result"]?["seq"]?.intValue,
                    case .int(let id)? = line["id"]
                {
                    acknowledged["w\(index).k\(Int(id) % 8)"] = (Int(id) / 8, seq)
                }
            }
            #expect(server.command.waitForExitStatus(timeout: .seconds(5)) != nil)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
            if names.contains(where: { ($0.hasPrefix("journal.") && $0 != "journal.log") || $0.hasSuffix(".tmp") }) {
                killedMidSnapshot += 1
            }
            // The restart takes the lock and a port at once, even if the orphaned snapshot process still runs.
            let restarted = try KVODProcess.start(arguments)
            let reader = try restarted.client()
            // Each key is written with rising values on one connection: a later write that was journaled but whose
            // acknowledgement never left may be there too, so the value is at least the acknowledged one.
            for (key, entry) in acknowledged {
                let stored = try reader.get(key).intValue ?? -1
                #expect(stored >= Int64(entry.value), "acknowledged seq \(entry.seq) of \(key) lost: \(stored)")
            }
            #expect(try reader.get("p19999") == .string("preloaded value 19999"))
            #expect(restarted.stop() == 0)
        }
        #expect(killedMidSnapshot > 0, "no kill landed during a background snapshot in \(iteration) tries")
    }
    /// The values `fillUntilASnapshotStarts` sets, `p0` to `p9999`.
    static let filler = String(repeating: "x", count: 2_000)

    /// Sets 10,000 keys to 2 KB values on `server`, started with `--snapshot-every 10000 --fsync always --log-level
    /// debug`: the first snapshot starts at the last of them and has 20 MB to fsync and write, so its process lives
    /// a while. Returns the client and the snapshot process's pid (from the log).
    static func fillUntilASnapshotStarts(_ server: KVODProcess) throws -> (KVOClient, Int32) {
        let client = try server.client()
        for start in stride(from: 0, to: 10_000, by: 500) {
            for index in start..<(start + 500) {
                try client.sendRaw(Peer.requestText(index, "set", #"{"path":"p\#(index)","value":"\#(index) \#(Self.filler)"}"#))
            }
            for _ in 0..<500 { #expect(try JSONParser.parse(try client.readRawLine())["result"]?["seq"] != nil) }
        }
        #expect(server.waitForLog("snapshot started"))
        let match = server.stderrText.firstMatch(of: /snapshot\.pid=(\d+)/)
        return (client, try #require(match.flatMap { Int32($0.1) }))
    }

    /// The `Cpus_allowed_list` of `/proc/PID/status`, or nil once the process is gone.
    static func allowedCPUs(_ pid: Int32) -> String? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return status.split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }
            .map { $0.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces) }
    }

    @Test func aSnapshotProcessRunsOnlyOnTheSnapshotCPUs() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The machine's last CPU: on more than one, kvod itself may run on all of them and its snapshot only there.
        let last = max(0, sysconf(Int32(_SC_NPROCESSORS_CONF)) - 1)
        let server = try KVODProcess.start([
            "--data-dir", directory, "--fsync", "always", "--snapshot-every", "10000", "--snapshot-cpus", "\(last)",
            "--log-level", "debug",
        ])
        let (client, child) = try Self.fillUntilASnapshotStarts(server)
        // The child pins itself first thing; until then it shows kvod's CPUs.
        var seen: [String] = []
        for _ in 0..<400 {
            guard let cpus = Self.allowedCPUs(child) else { break }
            if seen.last != cpus { seen.append(cpus) }
            if cpus == "\(last)" { break }
            usleep(5_000)
        }
        #expect(seen.last == "\(last)", "the snapshot process \(child) ran on CPUs \(seen), not \(last)")
        #expect(server.waitForLog("snapshot written", timeout: .seconds(60)))
        #expect(try client.get("p9999") == .string("9999 \(Self.filler)"))
        #expect(server.stop(grace: .seconds(60)) == 0)
    }

    /// kvod finds out at start which snapshot CPUs the kernel grants by taking them on its main thread; it then gives
    /// that thread its own CPUs back, and says nothing when all are granted.
    @Test func probingTheSnapshotCPUsLeavesKvodOnItsOwnCPUs() throws {
        let server = try KVODProcess.start(["--snapshot-cpus", "0"])
        let own = try #require(Self.allowedCPUs(getpid()))
        #expect(Self.allowedCPUs(server.command.pid) == own)
        #expect(server.stop() == 0)
        #expect(!server.stderrText.contains("--snapshot-cpus"), "\(server.stderrText)")
    }

    /// A cgroup v1 cpuset hierarchy this process may make a group in (it runs as root), on a machine of 2 CPUs or more.
    static let cpusetHierarchy: String? = {
        let path = "/sys/fs/cgroup/cpuset"
        guard getuid() == 0, sysconf(Int32(_SC_NPROCESSORS_ONLN)) > 1,
            access("\(path)/cpuset.cpus", W_OK) == 0 || access(path, W_OK) == 0,
            FileManager.default.fileExists(atPath: "\(path)/tasks")
        else { return nil }
        return path
    }()

    /// A kvod in a cpuset of CPU 0 (a container's `--cpuset-cpus 0`) given `--snapshot-cpus` outside it says at start
    /// that the kernel refuses them and where its snapshots run instead.
    @Test(.enabled(if: Self.cpusetHierarchy != nil, "needs root and a cgroup v1 cpuset hierarchy, 2 CPUs or more"))
    func snapshotCPUsOutsideKvodsCpusetAreNamedAtStart() throws {
        let group = "\(try #require(Self.cpusetHierarchy))/kvod-test-\(getpid())"
        try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: false)
        defer { rmdir(group) }
        try "0".write(toFile: "\(group)/cpuset.cpus", atomically: false, encoding: .utf8)
        let mems = try String(contentsOfFile: "\(group)/../cpuset.mems", encoding: .utf8)
        try mems.write(toFile: "\(group)/cpuset.mems", atomically: false, encoding: .utf8)
        let kvod = try existingBinaryURL(named: "kvod")
        for (cpus, refused, runOn) in [("1", "1", "the CPUs kvod runs on"), ("0,1", "1", "0")] {
            // The shell joins the group, then becomes kvod.
            let command = try RunningCommand(
                URL(fileURLWithPath: "/bin/sh"),
                ["-c", "echo $$ > \(group)/tasks && exec \"$0\" \"$@\"", kvod.path, "--host", "127.0.0.1", "--port", "0",
                    "--empty", "--snapshot-cpus", cpus])
            #expect(command.stderr.wait(timeout: .seconds(10)) { $0.contains("kvod started") }, "\(command.stderrText)")
            #expect(command.terminate() == 0)
            let warning = command.stderrText.split(separator: "\n").first { $0.contains("--snapshot-cpus") } ?? ""
            #expect(warning.contains("the kernel refuses some of these CPUs"), "\(command.stderrText)")
            #expect(warning.contains("refused=\(refused) "), "\(warning)")
            #expect(warning.contains("snapshots.run.on=\(runOn) "), "\(warning)")
        }
    }

    @Test func aSnapshotProcessDiesWithItsKvodAndNeverPutsItsFileInPlace() throws {
        let directory = DurabilityTests.scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--data-dir", directory, "--fsync", "always", "--snapshot-every", "10000"]
        let server = try KVODProcess.start(arguments + ["--log-level", "debug"])
        // The kill lands while the snapshot process works.
        _ = try Self.fillUntilASnapshotStarts(server)
        server.command.send(signal: SIGKILL)
        #expect(server.command.waitForExitStatus(timeout: .seconds(5)) != nil)
        let match = server.stderrText.firstMatch(of: /snapshot\.pid=(\d+)/)
        let child = try #require(match.flatMap { Int32($0.1) })
        // The kernel kills the child with its parent (it may stay a zombie if nothing reaps it here).
        var gone = false
        for _ in 0..<200 where !gone {
            let state = (try? String(contentsOfFile: "/proc/\(child)/stat", encoding: .utf8))?.split(separator: ")").last?
                .split(separator: " ").first
            gone = state == nil || state == "Z"
            if !gone { usleep(50_000) }
        }
        #expect(gone, "the snapshot process \(child) outlived its kvod")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        #expect(!names.contains("snapshot.kvs"), "a killed kvod's snapshot was put in place: \(names.sorted())")
        #expect(names.contains("journal.10000.log"))
        // The old state (no snapshot) and the journal still hold everything (replaying it takes a while).
        let restarted = try KVODProcess.start(arguments, timeout: .seconds(120))
        let reader = try restarted.client()
        #expect(try reader.get("p0") == .string("0 \(Self.filler)"))
        #expect(try reader.get("p9999") == .string("9999 \(Self.filler)"))
        #expect(restarted.stop() == 0)
    }
}
