// swift-tools-version:6.0
// kvod: a key-value-observing server. Layering (docs/ARCHITECTURE.md): pure engine and codec at the bottom, one
// module that touches libuv, a thin server on top, thin executables.
import PackageDescription

let argumentParser = Target.Dependency.product(name: "ArgumentParser", package: "swift-argument-parser")
let logging = Target.Dependency.product(name: "Logging", package: "swift-log")

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "kvod",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "ObjectGraph", targets: ["ObjectGraph"]),
        .library(name: "WireProtocol", targets: ["WireProtocol"]),
        .library(name: "ModelFile", targets: ["ModelFile"]),
        .library(name: "KVOClient", targets: ["KVOClient"]),
        .library(name: "KVOAsyncClient", targets: ["KVOAsyncClient"]),
        .executable(name: "kvod", targets: ["kvod"]),
        .executable(name: "kvoctl", targets: ["kvoctl"]),
        .executable(name: "kvod-bench", targets: ["kvod-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibUV", path: "Sources/CLibUV", pkgConfig: "libuv",
            providers: [.apt(["libuv1-dev"]), .brew(["libuv"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        // The only module that imports COpenSSL: TLS sessions over memory buffers, no sockets (docs/ARCHITECTURE.md#tls).
        .target(name: "TLS", dependencies: ["COpenSSL"], swiftSettings: strict),
        // EINTR-retrying system calls and whole reads and writes (Glibc only), for the modules that block.
        .target(name: "SystemCall", swiftSettings: strict),
        // The only module that imports CLibUV.
        .target(name: "UVLoop", dependencies: ["CLibUV"], swiftSettings: strict),
        // Pure: no I/O, no loop, no clock.
        .target(name: "ObjectGraph", exclude: ["Expression/README.md"], swiftSettings: strict),
        // Pure: bytes <-> JSON values and JSON-RPC messages.
        .target(name: "WireProtocol", swiftSettings: strict),
        // Pure: the WebSocket opening handshake and frames (RFC 6455), bytes in, events and bytes out.
        .target(name: "WebSocket", dependencies: ["WireProtocol"], swiftSettings: strict),
        // The bridge between engine values and JSON (used by the server and persistence).
        .target(name: "ValueCoding", dependencies: ["ObjectGraph", "WireProtocol"], swiftSettings: strict),
        // Durability: the journal and snapshots in the data directory (POSIX file I/O, no libuv).
        .target(
            name: "Persistence", dependencies: ["ObjectGraph", "WireProtocol", "ValueCoding", "SystemCall"],
            swiftSettings: strict),
        // Model files (docs/MODEL.md): JSON declarations of classes, loaded into an ObjectGraph model.
        .target(name: "ModelFile", dependencies: ["ObjectGraph", "WireProtocol"], swiftSettings: strict),
        // A small blocking client (POSIX sockets) used by kvoctl, the tests and the benchmarks.
        .target(name: "KVOClient", dependencies: ["WireProtocol", "TLS", "SystemCall"], swiftSettings: strict),
        // The async client library (docs/SWIFT-CLIENT.md): reconnection with `since`, change streams, observation
        // tokens, an @Observable mirror. POSIX sockets and a reader thread: no libuv, no Foundation.
        .target(name: "KVOAsyncClient", dependencies: ["KVOClient", "WireProtocol"], swiftSettings: strict),
        .target(
            name: "KVOServer",
            dependencies: [
                "UVLoop", "TLS", "ObjectGraph", "WireProtocol", "WebSocket", "ValueCoding", "Persistence", "SystemCall",
                logging,
            ],
            swiftSettings: strict),
        // kvoctl's commands, as a library: the kvoctl executable is one line over it.
        .target(
            name: "KVOCtlCommands", dependencies: ["KVOClient", "TLS", "WireProtocol", "SystemCall", argumentParser],
            swiftSettings: strict),
        // kvod parses its own options (Sources/kvod/DaemonOptions.swift): swift-argument-parser would link
        // FoundationEssentials into it, a third of the binary (docs/ARCHITECTURE.md#decisions).
        .executableTarget(
            name: "kvod",
            dependencies: ["KVOServer", "TLS", "ModelFile", "Persistence", "WireProtocol", "SystemCall", logging],
            resources: [
                .embedInCode("default-model.json"),
                // The web inspector (`--web-port`): Inspector/kvod.js is clients/typescript/dist/index.js, copied
                // (clients/typescript/test.sh checks that they are equal).
                .embedInCode("Inspector/index.html"), .embedInCode("Inspector/inspector.js"),
                .embedInCode("Inspector/inspector.css"), .embedInCode("Inspector/kvod.js"),
            ], swiftSettings: strict),
        .executableTarget(name: "kvoctl", dependencies: ["KVOCtlCommands"], swiftSettings: strict),
        // The load generator (Benchmarks/README.md); never part of the test suite.
        .executableTarget(
            name: "kvod-bench", dependencies: ["UVLoop", "TLS", "WireProtocol", "PeerProtocols", argumentParser],
            path: "Benchmarks/kvod-bench", swiftSettings: strict),
        // Pure: the peers' wire protocols kvod-bench speaks (NATS core, etcd's JSON gateway), tested in CI.
        .target(
            name: "PeerProtocols", dependencies: ["WireProtocol"], path: "Benchmarks/PeerProtocols",
            swiftSettings: strict),

        .target(name: "TestSupport", dependencies: ["KVOClient", "WireProtocol"], path: "Tests/TestSupport"),
        .testTarget(name: "ObjectGraphTests", dependencies: ["ObjectGraph", "TestSupport"]),
        .testTarget(name: "WireProtocolTests", dependencies: ["WireProtocol", "TestSupport"]),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "WireProtocol"]),
        .testTarget(name: "PeerProtocolsTests", dependencies: ["PeerProtocols"]),
        .testTarget(name: "ModelFileTests", dependencies: ["ModelFile", "ObjectGraph"]),
        .testTarget(name: "PersistenceTests", dependencies: ["Persistence", "ObjectGraph", "WireProtocol"]),
        .testTarget(name: "UVLoopTests", dependencies: ["UVLoop"]),
        .testTarget(
            name: "KVOServerTests",
            dependencies: [
                "KVOServer", "TestSupport", "KVOClient", "WireProtocol", "ObjectGraph", "ModelFile", "Persistence", "UVLoop",
                logging,
            ]),
        .testTarget(name: "KVOCtlTests", dependencies: ["TestSupport", "KVOClient", "WireProtocol", "KVOCtlCommands"]),
        .testTarget(name: "KVOAsyncClientTests", dependencies: ["KVOAsyncClient", "TestSupport", "KVOClient", "WireProtocol"]),
        // The kvod executable as a process: configuration precedence and errors, log formats, --help against docs.
        .testTarget(name: "KVODTests", dependencies: ["TestSupport", "KVOClient", "TLS", "WireProtocol"]),
        // Fuzz targets (docs/RELIABILITY.md, .ci/fuzz.sh): libFuzzer drivers when built with `-D KVOD_LIBFUZZER
        // -sanitize=fuzzer`; in a normal build, programs that replay a corpus.
        .target(name: "FuzzSupport", path: "Tests/Fuzz/FuzzSupport"),
        .executableTarget(
            name: "FuzzJSONRPC", dependencies: ["FuzzSupport", "WireProtocol", "ObjectGraph", "ValueCoding"],
            path: "Tests/Fuzz/FuzzJSONRPC"),
        .executableTarget(
            name: "FuzzKeyPath", dependencies: ["FuzzSupport", "ObjectGraph", "ModelFile"], path: "Tests/Fuzz/FuzzKeyPath"),
        .executableTarget(
            name: "FuzzExpression", dependencies: ["FuzzSupport", "ObjectGraph"], path: "Tests/Fuzz/FuzzExpression"),
        .executableTarget(
            name: "FuzzModelFile", dependencies: ["FuzzSupport", "ModelFile", "ObjectGraph"],
            path: "Tests/Fuzz/FuzzModelFile"),
        .executableTarget(
            name: "FuzzSnapshot", dependencies: ["FuzzSupport", "Persistence", "ObjectGraph"],
            path: "Tests/Fuzz/FuzzSnapshot"),
        .executableTarget(
            name: "FuzzEngine",
            dependencies: ["FuzzSupport", "ObjectGraph", "ModelFile", "Persistence", "ValueCoding", "WireProtocol"],
            path: "Tests/Fuzz/FuzzEngine"),
        .executableTarget(
            name: "FuzzWebSocket", dependencies: ["FuzzSupport", "WebSocket"], path: "Tests/Fuzz/FuzzWebSocket"),
        .executableTarget(name: "FuzzTLS", dependencies: ["FuzzSupport", "TLS"], path: "Tests/Fuzz/FuzzTLS"),
    ],
    swiftLanguageModes: [.v6]
)
