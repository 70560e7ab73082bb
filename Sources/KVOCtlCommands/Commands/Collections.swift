// `kvoctl insert|remove|replace PATH ...` (to-many mutations) and `kvoctl tx FILE|-` (an atomic transaction).
// Values are JSON, else strings, as for `set`.

import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Inserts into an ordered collection (at indexes, or at the end) or adds members to a set.
    struct Insert: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Insert values into a collection and print the result, e.g. {\"seq\":12}.",
            discussion: """
                With --index (repeatable, one per value) the values end up at those indexes; without, they are \
                appended to an ordered collection or added to a set (only the members not present yet).

                EXAMPLES:
                  kvoctl insert department.employees '{"name":"Ada","salary":100}'
                  kvoctl insert list x y                       # list is ["x","y"]
                  kvoctl insert list a b --index 0 --index 3   # list is ["a","x","y","b"]
                  kvoctl insert department.tags urgent
                """)

        @OptionGroup var connection: ConnectionOptions

        @OptionGroup var output: ValueOptions

        @Option(name: .customLong("index"), help: "Where a value goes (repeat once per value).")
        var indexes: [Int] = []

        @Argument(help: "The key path of the collection.")
        var path: String

        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The values: JSON, or else strings.", valueName: "value"))
        var values: [String] = []

        func validate() throws {
            if self.values.isEmpty { throw ValidationError("Give at least one value.") }
            if !self.indexes.isEmpty && self.indexes.count != self.values.count {
                throw ValidationError("Give one --index per value (\(self.values.count) values, \(self.indexes.count) indexes).")
            }
        }

        func run() throws {
            var params: JSONObject = ["path": .string(self.path), "values": .array(self.values.map(parseJSONOrString))]
            if !self.indexes.isEmpty { params["indexes"] = .array(self.indexes.map { .int(Int64($0)) }) }
            try self.output.print(try self.connection.call("insert", .object(params)))
        }
    }

    /// Removes elements by index from an ordered collection, or members by value from a set.
    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove elements (by --index) or set members (by --value) and print the result.",
            discussion: """
                EXAMPLES:
                  kvoctl insert list a b c
                  kvoctl remove list --index 0 --index 2   # list is ["b"]
                  kvoctl insert department.tags urgent
                  kvoctl remove department.tags --value urgent
                """)

        @OptionGroup var connection: ConnectionOptions

        @OptionGroup var output: ValueOptions

        @Option(name: .customLong("index"), help: "An index to remove (repeatable).")
        var indexes: [Int] = []

        @Option(name: .customLong("value"), help: "A set member to remove: JSON, or else a string (repeatable).")
        var values: [String] = []

        @Argument(help: "The key path of the collection.")
        var path: String

        func validate() throws {
            if self.indexes.isEmpty == self.values.isEmpty {
                throw ValidationError("Give --index (ordered collections) or --value (sets), not both.")
            }
        }

        func run() throws {
            var params: JSONObject = ["path": .string(self.path)]
            if self.indexes.isEmpty {
                params["values"] = .array(self.values.map(parseJSONOrString))
            } else {
                params["indexes"] = .array(self.indexes.map { .int(Int64($0)) })
            }
            try self.output.print(try self.connection.call("remove", .object(params)))
        }
    }

    /// Replaces elements of an ordered collection.
    struct Replace: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Replace the elements at --index (one per value) and print the result.",
            discussion: """
                EXAMPLES:
                  kvoctl insert list a b c
                  kvoctl replace list --index 1 B    # list is ["a","B","c"]
                """)

        @OptionGroup var connection: ConnectionOptions

        @OptionGroup var output: ValueOptions

        @Option(name: .customLong("index"), help: "An index to replace (one per value).")
        var indexes: [Int] = []

        @Argument(help: "The key path of the collection.")
        var path: String

        @Argument(parsing: .allUnrecognized, help: ArgumentHelp("The new values: JSON, or else strings.", valueName: "value"))
        var values: [String] = []

        func validate() throws {
            if self.values.isEmpty || self.indexes.count != self.values.count {
                throw ValidationError("Give one --index per value.")
            }
        }

        func run() throws {
            let params: JSONObject = [
                "path": .string(self.path), "indexes": .array(self.indexes.map { .int(Int64($0)) }),
                "values": .array(self.values.map(parseJSONOrString)),
            ]
            try self.output.print(try self.connection.call("replace", .object(params)))
        }
    }

    /// Runs an atomic transaction from a file or stdin.
    struct Tx: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a transaction: a JSON array of {\"method\", \"params\"} ops from FILE or - (stdin).",
            discussion: """
                All ops are validated and applied together with one seq, or none is (the error names the failing \
                op in data.op). Methods: set, insert, remove, replace, union, minus, intersect, setMembers.

                EXAMPLE:
                  echo '[{"method":"set","params":{"path":"a","value":1}},
                         {"method":"insert","params":{"path":"list","value":2}}]' | kvoctl tx -
                """)

        @OptionGroup var connection: ConnectionOptions

        @OptionGroup var output: ValueOptions

        @Argument(help: "A file holding the ops, or - for stdin.")
        var file: String

        /// Everything a descriptor holds until its end, or nil on a read error (a directory, say).
        private static func readAll(_ descriptor: Int32) -> [UInt8]? {
            var bytes: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count < 0 {
                    if errno == EINTR { continue }
                    return nil
                }
                if count == 0 { return bytes }
                bytes.append(contentsOf: chunk[0..<count])
            }
        }

        func run() throws {
            let descriptor = self.file == "-" ? STDIN_FILENO : open(self.file, O_RDONLY | O_CLOEXEC)
            let data = descriptor < 0 ? nil : Self.readAll(descriptor)
            if descriptor > STDIN_FILENO { close(descriptor) }
            guard let data else {
                Output.error("cannot read \(self.file)")
                throw KVOCtlExitCode.usage
            }
            let ops: JSONValue
            do {
                ops = try JSONParser.parse(data)
            } catch {
                Output.error("\(self.file): \(error)")
                throw KVOCtlExitCode.usage
            }
            guard case .array = ops else {
                Output.error("\(self.file): a transaction is a JSON array of {\"method\", \"params\"} ops")
                throw KVOCtlExitCode.usage
            }
            try self.output.print(try self.connection.call("transaction", .object(["ops": ops])))
        }
    }
}
