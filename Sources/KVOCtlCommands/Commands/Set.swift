// `kvoctl set PATH VALUE`: one `set` request; VALUE is JSON when it parses as JSON, else a string.

import ArgumentParser
import KVOClient
import WireProtocol

extension KVOCtl {
    /// Stores a value at a key path.
    struct Set: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store a value at a key path and print the result, e.g. {\"seq\":12}.",
            usage: """
                kvoctl set [--host <host>] [--port <port>] [--timeout <seconds>] [--string] \
                [--if-mod-seq <seq> | --if-value <json> | --if-absent] [--ttl <seconds>] [--format <format>] <path> <value>
                """,
            discussion: """
                VALUE is parsed as JSON; when it is not valid JSON it is stored as a string, so `kvoctl set name \
                Alice` stores "Alice" while `kvoctl set n 42` stores the number 42. Use --string to store text that \
                looks like JSON (`kvoctl set --string zip 75001`). A VALUE that starts with a dash is still a value \
                (`kvoctl set delta -7`). Missing or null intermediate objects on the path \
                are created. The printed result is the server's JSON result: the mutation's seq, plus the stored \
                value when validation changed it.

                A conditional write goes ahead only when the key is unchanged since a seq (--if-mod-seq, e.g. the \
                modSeq `kvoctl get --meta` printed), currently equals a JSON value (--if-value), or is null or unset \
                (--if-absent); otherwise kvod answers error 1011 with the current value and modSeq (exit status 2).

                With --ttl the key expires: kvod sets it to null that many seconds later, unless a later set moves \
                (with --ttl) or clears (without) the deadline. `kvoctl get --meta` shows it as `expires` (epoch ms).

                EXAMPLES:
                  kvoctl set person.firstName Ada
                  kvoctl set person.address '{"street":"10 Downing Street","city":"London"}'
                  kvoctl set counter 7                  # prints {"seq":3}
                  kvoctl set --if-mod-seq 3 counter 8   # only if unchanged since seq 3
                  kvoctl set --if-mod-seq 3 counter 9   # (exit 2): error 1011, changed at 4
                  kvoctl set --ttl 60 presence.ada.online true
                """)

        /// Where kvod is and how long to wait for it.
        @OptionGroup var connection: ConnectionOptions

        @Flag(name: .shortAndLong, help: "Store VALUE as a string even when it parses as JSON.")
        var string = false

        @Option(help: ArgumentHelp("Set only if the key was not stored since this seq (its modSeq).", valueName: "seq"))
        var ifModSeq: Int64?

        @Option(help: ArgumentHelp("Set only if the key's current value equals this JSON.", valueName: "json"))
        var ifValue: String?

        @Flag(help: "Set only if the key is null or was never set.")
        var ifAbsent = false

        @Option(help: ArgumentHelp("Set the key to null after this many seconds (up to a year).", valueName: "seconds"))
        var ttl: Double?

        @OptionGroup var output: ValueOptions

        @Argument(help: "The key path, e.g. person.address.city.")
        var path: String

        // Collected with .allUnrecognized so that a negative number (`kvoctl set n -7`) is a value, not an option.
        @Argument(
            parsing: .allUnrecognized,
            help: ArgumentHelp("The value: JSON, or else a string (quote it when it has spaces).", valueName: "value"))
        var values: [String] = []

        /// Rejects invalid values with a ValidationError (exit status 64).
        func validate() throws {
            let conditions = (self.ifModSeq != nil ? 1 : 0) + (self.ifValue != nil ? 1 : 0) + (self.ifAbsent ? 1 : 0)
            if conditions > 1 { throw ValidationError("Give at most one of --if-mod-seq, --if-value, --if-absent.") }
            if let seq = self.ifModSeq, seq < 0 { throw ValidationError("--if-mod-seq must be 0 or more.") }
            if let ttl = self.ttl, !(ttl > 0 && ttl <= 31_536_000) {
                throw ValidationError("--ttl must be a number of seconds above 0 and at most 31536000 (a year).")
            }
            if let text = self.ifValue, (try? JSONParser.parse(text)) == nil {
                throw ValidationError("--if-value must be JSON (quote strings: --if-value '\"Ada\"').")
            }
            guard self.values.count == 1 else {
                throw ValidationError(
                    self.values.isEmpty
                        ? "Missing expected argument '<value>'."
                        : "Expected one VALUE, got \(self.values.count) (quote a value that has spaces).")
            }
        }

        /// Connects, sends the request(s) and prints the outcome; failures become exit statuses (ExitCodes.swift).
        func run() throws {
            let text = self.values[0]
            let value = self.string ? JSONValue.string(text) : parseJSONOrString(text)
            let client = try self.connection.connect()
            let result: JSONValue
            do {
                var params: JSONObject = ["path": .string(self.path), "value": value]
                if let seq = self.ifModSeq {
                    params["if"] = .object(["modSeq": .int(seq)])
                } else if let text = self.ifValue, let expected = try? JSONParser.parse(text) {
                    params["if"] = .object(["value": expected])
                } else if self.ifAbsent {
                    params["if"] = .object(["absent": .bool(true)])
                }
                if let ttl = self.ttl {
                    params["ttl"] = ttl == ttl.rounded() ? .int(Int64(ttl)) : .double(ttl)
                }
                result = try client.call("set", .object(params))
            } catch {
                throw client.report(error)
            }
            try self.output.print(result)
        }
    }
}
