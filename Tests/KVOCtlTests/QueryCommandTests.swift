// `kvoctl get` and `kvoctl watch` with query flags (--where, --var, --order-by, --offset, --limit, --select), as real
// processes against a real kvod: the window and --meta, the errors and usage errors, a watch's JSON lines in a pipe
// (a move is a removal and an insertion at one seq, each with its count), and the redrawn table (--table), which
// after a run of mutations shows what `get` with the same query answers; plus the window and table alone.

import Foundation
import TestSupport
import Testing
import WireProtocol

@testable import KVOCtlCommands

@Suite("kvoctl get and watch with a query")
struct QueryCommandTests {
    /// Four players in `players` ($1 ada 5 team 0, $2 bob 9 team 1, $3 cy 1 team 0, $4 di 7 team 1).
    static func seed(_ server: KVODProcess) throws {
        let inserted = try CLI.run(
            ["insert", "players", #"{"name":"ada","score":5,"team":0}"#, #"{"name":"bob","score":9,"team":1}"#,
             #"{"name":"cy","score":1,"team":0}"#, #"{"name":"di","score":7,"team":1}"#],
            on: server)
        try #require(inserted.status == 0, "\(inserted)")
    }

    @Test func getPrintsTheWindow() throws {
        try withKVOD { server in
            try Self.seed(server)
            let top = try CLI.run(
                ["get", "players", "--where", "score > 2", "--order-by", "-score", "--limit", "2", "--select", "name",
                 "--select", "score"],
                on: server)
            #expect(top.status == 0, "\(top)")
            #expect(try parseJSON(top.stdout) == .json(#"[{"$id":2,"name":"bob","score":9},{"$id":4,"name":"di","score":7}]"#))
            // Several sort keys, an offset, and --meta: the window with the count and the seq.
            let page = try CLI.run(
                ["get", "players", "--order-by", "team", "--order-by", "-score", "--offset", "1", "--limit", "2",
                 "--select", "name", "--meta"],
                on: server)
            #expect(try parseJSON(page.stdout) == .json(#"{"value":[{"$id":3,"name":"cy"},{"$id":2,"name":"bob"}],"count":4,"seq":1}"#))
            // A sort descriptor as JSON; a variable (the stub predicate ignores it, the wire carries it).
            let named = try CLI.run(
                ["get", "players", "--order-by", #"{"key":"name","ascending":false}"#, "--limit", "1", "--select",
                 "name", "--var", "min=3"],
                on: server)
            #expect(try parseJSON(named.stdout) == .json(#"[{"$id":4,"name":"di"}]"#), "\(named)")
            // Without query flags, get is the plain get.
            #expect(try parseJSON(try CLI.run(["get", "players.@count"], on: server).stdout) == 4)
        }
    }

    @Test func badQueriesAreErrors() throws {
        try withKVOD { server in
            try Self.seed(server)
            let syntax = try CLI.run(["get", "players", "--where", "score >"], on: server)
            #expect(syntax.status == 2 && syntax.stderr.contains("1013"), "\(syntax)")
            let notACollection = try CLI.run(["get", "players.0", "--limit", "1"], on: server)
            #expect(notACollection.status == 2, "\(notACollection)")
            for arguments in [
                ["get", "players", "--var", "x"], ["get", "players", "--offset", "-1"],
                ["get", "players", "--limit", "-2"], ["get", "players", "--order-by", "-"],
                ["watch", "players", "--limit", "1", "--since", "3"], ["watch", "players", "--table"],
            ] {
                let result = try CLI.run(arguments, on: server)
                #expect(result.status == 64 && result.stdout.isEmpty, "\(arguments): \(result)")
            }
        }
    }

    @Test func aPipedWatchPrintsEachNotification() throws {
        try withKVOD { server in
            try Self.seed(server)
            let watch = try CLI.start(
                ["watch", "players", "--order-by", "-score", "--limit", "2", "--select", "name", "--initial", "--new",
                 "--count", "3"],
                on: server)
            try waitForSubscription(on: server, path: "players")
            // cy climbs from last to first: di is pushed out (a removal) and cy comes in at 0 (an insertion).
            let set = try parseJSON(try CLI.run(["set", "$3.score", "100"], on: server).stdout)
            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            let lines = try result.stdoutLines.map { try parseJSON($0) }
            try #require(lines.count == 3, "\(result)")
            #expect(lines[0]["initial"] == true && lines[0]["count"] == 4)
            #expect(lines[0]["new"] == .json(#"[{"$id":2,"name":"bob"},{"$id":4,"name":"di"}]"#))
            #expect(lines[1]["kind"] == "removal" && lines[1]["indexes"] == [1] && lines[1]["seq"] == set["seq"])
            #expect(lines[2]["kind"] == "insertion" && lines[2]["indexes"] == [0] && lines[2]["seq"] == set["seq"])
            #expect(lines[2]["new"] == .json(#"[{"$id":3,"name":"cy"}]"#) && lines[2]["count"] == 4)
        }
    }

    @Test func theTableShowsWhatGetAnswers() throws {
        try withKVOD { server in
            try Self.seed(server)
            let query = ["--where", "team == 1", "--order-by", "-score", "--order-by", "name", "--limit", "3",
                         "--select", "name", "--select", "score"]
            // Each mutation below changes the window: the initial drawing and one per mutation.
            let mutations: [[String]] = [
                ["set", "$1.team", "1"],                                  // ada joins team 1: an insertion
                ["set", "$2.score", "0"],                                 // bob drops to the end: a move
                ["insert", "players", #"{"name":"eve","score":8,"team":1}"#],  // eve comes in, bob is pushed out
                ["set", "$4.name", "dora"],                               // a shown element's selected key
                ["remove", "players", "--index", "0"],                    // ada leaves: bob comes back
                ["set", "$5.team", "0"],                                  // eve leaves team 1
            ]
            let watch = try CLI.start(
                ["watch", "players", "--table", "--count", String(mutations.count + 1)] + query, on: server)
            try waitForSubscription(on: server, path: "players")
            for mutation in mutations {
                let result = try CLI.run(mutation, on: server)
                try #require(result.status == 0, "\(mutation): \(result)")
            }
            let result = try watch.waitForExit(timeout: .seconds(10))
            #expect(result.status == 0, "\(result)")
            // Drawings follow one another after a blank line; the last is the window now.
            let drawings = result.stdout.split(separator: "\n\n").map(String.init)
            try #require(drawings.count == mutations.count + 1, "\(result)")
            #expect(drawings[0] == "seq 1: rows 1-2 of 2 matches\n#  $id  name  score\n1    2  bob       9\n2    4  di        7")
            let expected = try parseJSON(try CLI.run(["get", "players", "--meta"] + query, on: server).stdout)
            var window = QueryWindow()
            try window.apply(.object(["kind": "setting", "new": expected["value"] ?? .null, "count": expected["count"] ?? 0,
                                      "seq": expected["seq"] ?? 0]))
            let last = drawings[drawings.count - 1].trimmingCharacters(in: .newlines)
            #expect(last == window.table(offset: 0, select: ["name", "score"]).joined(separator: "\n"))
            #expect(last.hasPrefix("seq 7: rows 1-2 of 2 matches"), "\(last)")
        }
    }

    @Test func theWindowAppliesNotificationsAndDrawsATable() throws {
        var window = QueryWindow()
        try window.apply(.json(#"{"kind":"setting","new":[{"$id":1,"n":"a"},{"$id":2,"n":"b"},{"$id":3,"n":"c"}],"count":9,"seq":4}"#))
        try window.apply(.json(#"{"kind":"removal","indexes":[0,2],"count":8,"seq":5}"#))
        try window.apply(.json(#"{"kind":"insertion","indexes":[0,2],"new":[{"$id":4,"n":"d"},{"$id":5,"n":"e","x":1.5}],"count":8,"seq":5}"#))
        try window.apply(.json(#"{"kind":"replacement","indexes":[1],"new":[{"$id":2,"n":"B"}],"count":8,"seq":5}"#))
        try window.apply(.json(#"{"kind":"removal","indexes":[0],"prior":true,"seq":6}"#))
        #expect(window.rows == [.json(#"{"$id":4,"n":"d"}"#), .json(#"{"$id":2,"n":"B"}"#), .json(#"{"$id":5,"n":"e","x":1.5}"#)])
        #expect(window.count == 8 && window.seq == 5)
        #expect(window.table(offset: 10, select: []) == [
            "seq 5: rows 11-13 of 8 matches", " #  $id  n  x", "11    4  d", "12    2  B", "13    5  e  1.5",
        ])
        for bad in [
            #"{"kind":"removal","indexes":[3],"seq":7}"#, #"{"kind":"insertion","indexes":[9],"new":[1],"seq":7}"#,
            #"{"kind":"insertion","indexes":[0],"seq":7}"#, #"{"kind":"replacement","indexes":[0],"new":[1,2],"seq":7}"#,
            #"{"kind":"removal","seq":7}"#, #"{"kind":"setting","seq":7}"#, #"{"kind":"moved","indexes":[],"seq":7}"#,
        ] {
            var copy = window
            #expect(throws: QueryWindow.Mismatch.self, "\(bad)") { try copy.apply(.json(bad)) }
        }
        var scalars = QueryWindow()
        try scalars.apply(.json(#"{"kind":"setting","new":["x",2],"count":1,"seq":1}"#))
        #expect(scalars.table(offset: 0, select: []) == ["seq 1: rows 1-2 of 1 match", "#  value", "1  x", "2      2"])
        #expect(QueryWindow().table(offset: 0, select: []) == ["seq -: no rows of 0 matches"])
    }
}
