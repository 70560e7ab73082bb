// kvod's configuration: every setting with its default, resolved from flags, the environment and the config file
// (SettingLayers.swift), checked, and turned into what the server needs. docs/CONFIGURATION.md describes each one;
// DaemonOptions.swift declares the options. To add a setting: a property here (its default is the documented one),
// one declaration in DaemonOptions.all, a row in docs/CONFIGURATION.md.
#if canImport(Glibc)
import Glibc
#endif
import KVOServer
import Logging
import Persistence
import TLS
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
    /// Microseconds to keep polling after each read (0: off).
    var busyPollMicroseconds = 0
    // Durability and resuming (docs/DURABILITY.md).
    var dataDirectory: String?
    var fsync = FsyncPolicy.everysec
    var snapshotEvery = 10_000
    var snapshotCPUs: [Int] = []
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
    // TLS (Protocol/README.md#tls).
    var tlsCert: String?
    var tlsKey: String?
    var tlsCA: String?
    var tlsClientAuth = TLSClientAuth.none
    var tlsMinVersion = TLSVersion.tls12
    var tlsOnly = false
    // The cluster (docs/SCALING.md).
    var clusterEtcd: [EtcdEndpoint] = []
    var clusterEtcdCA: String?
    var clusterEtcdCert: String?
    var clusterEtcdKey: String?
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
        cluster.token = self.accessControl.tokens.first {
            $0.access == .readWrite && $0.paths == nil && $0.certificateName == nil
        }
            .map { String(decoding: $0.secret, as: UTF8.self) }
        return cluster
    }

    /// The server's TLS files and choices; nil without `tls-cert`.
    var tlsSettings: TLSServerSettings? {
        guard let certificate = self.tlsCert, let key = self.tlsKey else { return nil }
        return TLSServerSettings(
            certificatePath: certificate, keyPath: key, caPath: self.tlsCA, clientAuth: self.tlsClientAuth,
            minimumVersion: self.tlsMinVersion)
    }

    /// The client context of a follower's replication link: with `tls-cert`, the leader's certificate is checked
    /// against `tls-ca` (else the system's CAs) and this member presents its own certificate. nil: plaintext.
    func peerTLSContext() throws(TLSError) -> TLSContext? {
        guard let certificate = self.tlsCert, let key = self.tlsKey else { return nil }
        return try TLSContext.client(
            TLSClientSettings(
                caPath: self.tlsCA, certificatePath: certificate, keyPath: key, minimumVersion: self.tlsMinVersion))
    }

    /// The client context for `https://` etcd endpoints; nil when none is https.
    func etcdTLSContext() throws(TLSError) -> TLSContext? {
        guard self.clusterEtcd.contains(where: \.isTLS) else { return nil }
        return try TLSContext.client(
            TLSClientSettings(
                caPath: self.clusterEtcdCA, certificatePath: self.clusterEtcdCert, keyPath: self.clusterEtcdKey))
    }

    /// What the server needs (without its TLS context, which the daemon makes from `tlsSettings`).
    var server: ServerConfiguration {
        var server = ServerConfiguration(
            host: self.host, port: self.port, limits: self.limits, historyCapacity: self.history)
        server.accessControl = self.accessControl
        server.metricsHost = self.metricsHost ?? self.host
        server.metricsPort = self.metricsPort
        server.webSocketPort = self.wsPort
        server.webSocketOrigins = self.wsOrigins
        server.web = self.webPort.map { WebConfiguration(port: $0, files: Inspector.files) }
        server.snapshotCPUs = self.snapshotCPUs
        server.busyPollMicroseconds = self.busyPollMicroseconds
        server.tlsOnly = self.tlsOnly
        return server
    }

    // MARK: - Resolving

    /// Resolves every setting of `DaemonOptions.all`, in its order: `arguments` (flags) over `environment` (`KVOD_*`)
    /// over the config file (`--config`, else `KVOD_CONFIG`) over the defaults; then reads the token file and
    /// `KVOD_TOKEN`.
    /// - Throws: a ConfigurationError naming the flag, variable or file key at fault.
    static func resolve(
        arguments: DaemonArguments, environment: [String: String]
    ) throws(ConfigurationError) -> Configuration {
        let configFlag = arguments.value(of: "config")
        let configPath = configFlag ?? environment["KVOD_CONFIG"].flatMap { $0.isEmpty ? nil : $0 }
        var layers = SettingLayers(
            flags: arguments.values, environment: environment, file: try configPath.map(ConfigFile.init(path:)))
        var configuration = Configuration()
        for option in DaemonOptions.all {
            try option.resolve?(&configuration, &layers)
        }

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
        if (configuration.tlsCert == nil) != (configuration.tlsKey == nil) {
            throw ConfigurationError(message: "tls-cert and tls-key go together: give both")
        }
        if configuration.tlsCert == nil {
            if configuration.tlsOnly { throw ConfigurationError(message: "tls-only needs tls-cert and tls-key") }
            if configuration.tlsClientAuth != .none {
                throw ConfigurationError(message: "tls-client-auth needs tls-cert and tls-key")
            }
        }
        if configuration.tlsClientAuth != .none && configuration.tlsCA == nil {
            throw ConfigurationError(
                message: "tls-client-auth \(configuration.tlsClientAuth.rawValue) needs tls-ca (the CA client certificates chain to)")
        }
        if (configuration.clusterEtcdCert == nil) != (configuration.clusterEtcdKey == nil) {
            throw ConfigurationError(message: "cluster-etcd-cert and cluster-etcd-key go together: give both")
        }
        if configuration.empty, let model = configuration.model {
            throw ConfigurationError(message: "empty and model exclude each other (model: \(model))")
        }
        configuration.accessControl = try Self.loadTokens(
            file: configuration.tokenFile, environment: layers.environmentValue("KVOD_TOKEN"))
        configuration.resolved = layers.resolved
        if let configPath {
            let source: SettingSource = configFlag != nil ? .flag("--config") : .environment("KVOD_CONFIG")
            configuration.resolved.insert(("config", configPath, source), at: 0)
        }
        if layers.environmentValue("KVOD_TOKEN") != nil {
            configuration.resolved.append(("token", "(set, not shown)", .environment("KVOD_TOKEN")))
        }
        return configuration
    }

    // MARK: - Parsing the settings that are more than a number or a name

    /// `log-level`: one of swift-log's levels.
    static func parseLogLevel(_ raw: RawSetting) throws(SettingError) -> Logger.Level {
        let names = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        return Logger.Level(rawValue: try SettingParser.choice(names)(raw)) ?? .info
    }

    /// `ws-origins`: comma-separated `scheme://host[:port]` origins, or `*`.
    static func parseOrigins(_ raw: RawSetting) throws(SettingError) -> [String] {
        let origins = try SettingParser.string(raw).split(separator: ",").map {
            String($0.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
        }.filter { !$0.isEmpty }
        for origin in origins where origin != "*" && !(origin.hasPrefix("http://") || origin.hasPrefix("https://")) {
            throw SettingError(message: "'\(origin)' is not an origin: write scheme://host[:port], or *")
        }
        return origins
    }

    /// `snapshot-cpus`: comma-separated CPU numbers and ranges (`1,3`, `2-3`) of this machine; empty: none given.
    static func parseCPUList(_ raw: RawSetting) throws(SettingError) -> [Int] {
        let count = max(1, sysconf(Int32(_SC_NPROCESSORS_CONF)))
        var cpus: Set<Int> = []
        for item in try SettingParser.string(raw).split(separator: ",") {
            let text = String(item.filter { $0 != " " })
            let ends = text.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false).map { Int($0) }
            guard let first = ends.first ?? nil, let last = ends.last ?? nil, first >= 0, first <= last else {
                throw SettingError(message: "'\(text)' is not a CPU or a range of CPUs: write e.g. 1,3 or 2-3")
            }
            guard last < count else {
                throw SettingError(message: "CPU \(last) is not on this machine (its CPUs are 0-\(count - 1))")
            }
            cpus.formUnion(first...last)
        }
        return cpus.sorted()
    }

    /// A CPU list as `--print-config` shows it (empty: kvod's own).
    static func showCPUList(_ cpus: [Int]) -> String {
        cpus.isEmpty ? "those kvod runs on" : cpus.map(String.init).joined(separator: ",")
    }

    /// `cluster-etcd`: comma-separated `http://IP:PORT` client URLs.
    static func parseEtcdEndpoints(_ raw: RawSetting) throws(SettingError) -> [EtcdEndpoint] {
        try SettingParser.string(raw).split(separator: ",").map { text throws(SettingError) in
            let trimmed = String(text.filter { $0 != " " })
            guard let endpoint = EtcdEndpoint(parsing: trimmed) else {
                throw SettingError(message: "'\(trimmed)' is not an etcd client URL: write http://IP:PORT or https://IP:PORT")
            }
            return endpoint
        }
    }

    /// `cluster`: letters, digits, `-`, `_` and `.`.
    static func parseClusterName(_ raw: RawSetting) throws(SettingError) -> String {
        let name = try SettingParser.string(raw)
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == "." })
        else { throw SettingError(message: "'\(name)': a cluster name is letters, digits, '-', '_' and '.'") }
        return name
    }

    /// `advertise`: `HOST:PORT`.
    static func parseAdvertisedAddress(_ raw: RawSetting) throws(SettingError) -> String {
        let address = try SettingParser.string(raw)
        guard let colon = address.lastIndex(of: ":"), colon != address.startIndex,
            let port = Int(address[address.index(after: colon)...]), (1...65535).contains(port)
        else { throw SettingError(message: "'\(address)' is not HOST:PORT") }
        return address
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
