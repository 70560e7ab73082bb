// kvod's configuration: every setting with its default, resolved from flags, the environment and the config file
// (SettingLayers.swift), checked, and turned into what the server needs. docs/CONFIGURATION.md describes each one;
// DaemonOptions.swift declares the flags. To add a setting: a property here (its default is the documented one), a
// line in `resolve`, a flag in DaemonOptions, a row in docs/CONFIGURATION.md.
import KVOServer
import Logging
import Persistence
import WireProtocol

/// How log lines are written.
enum LogFormat: String, CaseIterable {
    /// swift-log's StreamLogHandler: `TIME LEVEL LABEL: [METADATA] MESSAGE`.
    case text
    /// One JSON object per line (JSONLogHandler).
    case json
}

/// Everything kvod was configured with, after precedence and checks.
struct Configuration {
    var host = "127.0.0.1"
    var port = 7070
    var model: String?
    var empty = false
    // Durability and resuming (docs/DURABILITY.md).
    var dataDirectory: String?
    var fsync = FsyncPolicy.everysec
    var snapshotEvery = 10_000
    var history = 10_000
    // Access control.
    var tokenFile: String?
    var accessControl = AccessControl()
    // Limits.
    var limits = Limits()
    // Observability.
    var logLevel = Logger.Level.info
    var logFormat = LogFormat.text
    var metricsHost: String?
    var metricsPort: Int?
    // WebSocket.
    var wsPort: Int?
    var wsOrigins: [String] = []
    // The web inspector.
    var webPort: Int?
    // The cluster (docs/SCALING.md).
    var clusterEtcd: [EtcdEndpoint] = []
    var cluster: String?
    var advertise: String?
    var clusterLeaseSeconds = 5
    var replicationBacklog = 100_000
    var syncReplicas = 0
    /// Each setting, its value as shown to people and where it came from (for `--print-config`).
    var resolved: [(name: String, value: String, source: SettingSource)] = []

    /// The defaults, as documented.
    static let defaults = Configuration()

    /// How this member joins its cluster; nil without `cluster-etcd`.
    var clusterConfiguration: ClusterConfiguration? {
        guard !self.clusterEtcd.isEmpty, let name = self.cluster, let advertise = self.advertise else { return nil }
        var cluster = ClusterConfiguration(
            endpoints: self.clusterEtcd, name: name, advertise: advertise, leaseSeconds: self.clusterLeaseSeconds)
        cluster.backlogRecords = self.replicationBacklog
        cluster.syncReplicas = self.syncReplicas
        // A follower presents a read-write, unrestricted token to its leader (members share their tokens).
        cluster.token = self.accessControl.tokens.first { $0.access == .readWrite && $0.paths == nil }
            .map { String(decoding: $0.secret, as: UTF8.self) }
        return cluster
    }

    /// What the server needs.
    var server: ServerConfiguration {
        var server = ServerConfiguration(
            host: self.host, port: self.port, limits: self.limits, historyCapacity: self.history)
        server.accessControl = self.accessControl
        server.metricsHost = self.metricsHost ?? self.host
        server.metricsPort = self.metricsPort
        server.webSocketPort = self.wsPort
        server.webSocketOrigins = self.wsOrigins
        server.web = self.webPort.map { WebConfiguration(port: $0, files: Inspector.files) }
        return server
    }

    // MARK: - Resolving

    /// Resolves every setting: `options` (flags) over `environment` (`KVOD_*`) over the config file (`--config`, else
    /// `KVOD_CONFIG`) over the defaults; then reads the token file and `KVOD_TOKEN`.
    /// - Throws: a ConfigurationError naming the flag, variable or file key at fault.
    static func resolve(
        options: DaemonOptions, environment: [String: String]
    ) throws(ConfigurationError) -> Configuration {
        let configPath = options.config ?? environment["KVOD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        var layers = SettingLayers(environment: environment, file: try configPath.map(ConfigFile.init(path:)))
        var configuration = Configuration()
        let defaults = Self.defaults
        let port = SettingParser.integer(in: 0...65535)
        let count = SettingParser.integer(in: 1...100_000_000)
        let bytes = SettingParser.integer(in: 0...Int(Int32.max))

        configuration.host = try layers.value("host", flag: options.host, default: defaults.host, parse: SettingParser.string)
        configuration.port = try layers.value("port", flag: options.port, default: defaults.port, parse: port)
        configuration.model = try layers.path("model", flag: options.model)
        configuration.empty = try layers.value("empty", flag: options.empty.map { "\($0)" }, default: false, parse: SettingParser.bool)

        configuration.dataDirectory = try layers.path("data-dir", flag: options.dataDir)
        configuration.fsync = try layers.value(
            "fsync", flag: options.fsync, default: defaults.fsync, show: { $0.rawValue }
        ) { raw throws(SettingError) in
            FsyncPolicy(rawValue: try SettingParser.choice(["always", "everysec", "no"])(raw)) ?? .everysec
        }
        configuration.snapshotEvery = try layers.value(
            "snapshot-every", flag: options.snapshotEvery, default: defaults.snapshotEvery,
            parse: SettingParser.integer(in: 0...Int.max))
        configuration.history = try layers.value(
            "history", flag: options.history, default: defaults.history,
            parse: SettingParser.integer(in: 0...10_000_000))

        configuration.tokenFile = try layers.path("token-file", flag: options.tokenFile)

        var limits = defaults.limits
        limits.maxConnections = try layers.value(
            "max-connections", flag: options.maxConnections, default: limits.maxConnections, parse: count)
        limits.maxSubscriptionsPerConnection = try layers.value(
            "max-subscriptions", flag: options.maxSubscriptions, default: limits.maxSubscriptionsPerConnection,
            parse: count)
        limits.maxLineBytes = try layers.value(
            "max-line-bytes", flag: options.maxLineBytes, default: limits.maxLineBytes,
            parse: SettingParser.integer(in: 1024...(1 << 30)))
        limits.maxBatchRequests = try layers.value(
            "max-batch-requests", flag: options.maxBatchRequests, default: limits.maxBatchRequests, parse: count)
        limits.maxJSONDepth = try layers.value(
            "max-json-depth", flag: options.maxJSONDepth, default: limits.maxJSONDepth,
            parse: SettingParser.integer(in: 2...64))
        limits.maxAuthenticationFailures = try layers.value(
            "max-auth-failures", flag: options.maxAuthFailures, default: limits.maxAuthenticationFailures,
            parse: SettingParser.integer(in: 0...1_000_000))
        limits.authTimeoutSeconds = try layers.value(
            "auth-timeout", flag: options.authTimeout, default: limits.authTimeoutSeconds,
            parse: SettingParser.integer(in: 0...86_400))
        limits.outputHardLimitBytes = try layers.value(
            "output-hard-limit-bytes", flag: options.outputHardLimitBytes, default: limits.outputHardLimitBytes,
            parse: bytes)
        limits.outputSoftLimitBytes = try layers.value(
            "output-soft-limit-bytes", flag: options.outputSoftLimitBytes, default: limits.outputSoftLimitBytes,
            parse: bytes)
        limits.outputSoftLimitSeconds = try layers.value(
            "output-soft-limit-seconds", flag: options.outputSoftLimitSeconds, default: limits.outputSoftLimitSeconds,
            parse: SettingParser.integer(in: 0...86_400))
        configuration.limits = limits

        configuration.logLevel = try layers.value(
            "log-level", flag: options.logLevel, default: defaults.logLevel, show: { $0.rawValue }
        ) { raw throws(SettingError) in
            let names = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
            return Logger.Level(rawValue: try SettingParser.choice(names)(raw)) ?? .info
        }
        configuration.logFormat = try layers.value(
            "log-format", flag: options.logFormat, default: defaults.logFormat, show: { $0.rawValue }
        ) { raw throws(SettingError) in
            LogFormat(rawValue: try SettingParser.choice(LogFormat.allCases.map(\.rawValue))(raw)) ?? .text
        }
        configuration.metricsHost = try layers.optionalValue(
            "metrics-host", flag: options.metricsHost, parse: SettingParser.string)
        configuration.metricsPort = try layers.optionalValue("metrics-port", flag: options.metricsPort, parse: port)
        configuration.wsPort = try layers.optionalValue("ws-port", flag: options.wsPort, parse: port)
        configuration.wsOrigins = try layers.value(
            "ws-origins", flag: options.wsOrigins, default: [], show: { $0.isEmpty ? "any" : $0.joined(separator: ",") }
        ) { raw throws(SettingError) in
            let origins = try SettingParser.string(raw).split(separator: ",").map {
                String($0.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
            }.filter { !$0.isEmpty }
            for origin in origins where origin != "*" && !(origin.hasPrefix("http://") || origin.hasPrefix("https://")) {
                throw SettingError(message: "'\(origin)' is not an origin: write scheme://host[:port], or *")
            }
            return origins
        }
        configuration.webPort = try layers.optionalValue("web-port", flag: options.webPort, parse: port)
        configuration.clusterEtcd = try layers.value(
            "cluster-etcd", flag: options.clusterEtcd, default: [],
            show: { $0.isEmpty ? "none" : $0.map(\.description).joined(separator: ",") }
        ) { raw throws(SettingError) in
            try SettingParser.string(raw).split(separator: ",").map { text throws(SettingError) in
                let trimmed = String(text.filter { $0 != " " })
                guard let endpoint = EtcdEndpoint(parsing: trimmed) else {
                    throw SettingError(message: "'\(trimmed)' is not an etcd client URL: write http://IP:PORT")
                }
                return endpoint
            }
        }
        configuration.cluster = try layers.optionalValue("cluster", flag: options.cluster) { raw throws(SettingError) in
            let name = try SettingParser.string(raw)
            guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." })
            else { throw SettingError(message: "'\(name)': a cluster name is letters, digits, '-', '_' and '.'") }
            return name
        }
        configuration.advertise = try layers.optionalValue("advertise", flag: options.advertise) {
            raw throws(SettingError) in
            let address = try SettingParser.string(raw)
            guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
                let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port)
            else { throw SettingError(message: "'\(address)' is not HOST:PORT") }
            return address
        }
        configuration.clusterLeaseSeconds = try layers.value(
            "cluster-lease-seconds", flag: options.clusterLeaseSeconds, default: defaults.clusterLeaseSeconds,
            parse: SettingParser.integer(in: 2...600))
        configuration.replicationBacklog = try layers.value(
            "replication-backlog", flag: options.replicationBacklog, default: defaults.replicationBacklog,
            parse: SettingParser.integer(in: 1...100_000_000))
        configuration.syncReplicas = try layers.value(
            "sync-replicas", flag: options.syncReplicas, default: defaults.syncReplicas,
            parse: SettingParser.integer(in: 0...16))

        try layers.rejectUnknownFileKeys()
        if configuration.syncReplicas > 0 && configuration.clusterEtcd.isEmpty {
            // Without a cluster nothing could acknowledge: refused rather than silently asynchronous.
            throw ConfigurationError(message: "sync-replicas needs cluster-etcd")
        }
        if !configuration.clusterEtcd.isEmpty {
            if configuration.dataDirectory == nil { throw ConfigurationError(message: "cluster-etcd needs data-dir") }
            if configuration.cluster == nil { throw ConfigurationError(message: "cluster-etcd needs cluster (a name)") }
            if configuration.advertise == nil {
                throw ConfigurationError(message: "cluster-etcd needs advertise (HOST:PORT)")
            }
        }
        if configuration.empty, let model = configuration.model {
            throw ConfigurationError(message: "empty and model exclude each other (model: \(model))")
        }
        configuration.accessControl = try Self.loadTokens(
            file: configuration.tokenFile, environment: layers.environmentValue("KVOD_TOKEN"))
        configuration.resolved = layers.resolved
        if let configPath {
            let source: SettingSource = options.config != nil ? .flag("--config") : .environment("KVOD_CONFIG")
            configuration.resolved.insert(("config", configPath, source), at: 0)
        }
        if layers.environmentValue("KVOD_TOKEN") != nil {
            configuration.resolved.append(("token", "(set, not shown)", .environment("KVOD_TOKEN")))
        }
        return configuration
    }

    /// The tokens of the token file plus `KVOD_TOKEN` (read-write). None: access control is off.
    private static func loadTokens(file: String?, environment token: String?) throws(ConfigurationError) -> AccessControl {
        var tokens: [AccessToken] = []
        if let file {
            guard let data = POSIX.readFile(file) else {
                throw ConfigurationError(message: "token file \(file): cannot be read")
            }
            do {
                tokens = try AccessControl.parseTokenFile(String(decoding: data, as: UTF8.self), fileName: file)
            } catch {
                throw ConfigurationError(message: "token file \(error)")
            }
        }
        if let token {
            guard !token.contains(where: { $0 == " " || $0 == "\t" || $0 == "\n" }) else {
                throw ConfigurationError(message: "KVOD_TOKEN: a token may not contain spaces or newlines")
            }
            tokens.append(AccessToken(secret: token, access: .readWrite))
        }
        return AccessControl(tokens: tokens)
    }

    // MARK: - Showing

    /// The effective configuration as one JSON object: `{"NAME": {"value": V, "source": S}, ...}`. Tokens are never
    /// shown.
    var printable: String {
        var lines: [String] = []
        for (name, value, source) in self.resolved {
            lines.append("  \(Self.quote(name)): {\"value\": \(Self.quote(value)), \"source\": \(Self.quote(source.description))}")
        }
        return "{\n" + lines.joined(separator: ",\n") + "\n}"
    }

    private static func quote(_ text: String) -> String {
        JSONWriter.encodeString(.string(text))
    }
}
