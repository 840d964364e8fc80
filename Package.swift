// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Jotter",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "jotter", targets: ["jotter"]),
        .library(name: "JotterClient", targets: ["JotterClient"]),
    ],
    targets: [
        // llhttp 8.1, compiled from the C sources Debian's node-llhttp installs under /usr/share,
        // and the shim that records a request's head as spans of the read buffer.
        .target(name: "CLLHTTP"),
        // epoll, eventfd and accept4 for the engine's event loops (GNU extensions Glibc's module
        // leaves out), and TLS on those sockets with OpenSSL 3's libssl (libssl-dev).
        .target(name: "CEngine", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // What the system offers, written once: the monotonic and wall clocks, threads, a
        // semaphore, periodic tasks, random bytes, SHA-256 (libcrypto). No Foundation.
        .target(name: "JotterSystem", dependencies: ["CCrypto"]),
        // The HTTP framework: engine, routing, middleware, bodies, errors. Knows nothing of notes.
        .target(name: "JotterHTTP", dependencies: ["CLLHTTP", "CEngine", "CNGHTTP2", "JotterSystem", "JotterWire"]),
        // libnghttp2 from Debian (libnghttp2-dev): HTTP/2 framing, HPACK, flow control and
        // stream states for the engine's HTTP/2 connections.
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // What server and clients share about the wire, with no dependencies: JSON Schema values
        // and `SchemaDescribing`, from which the OpenAPI document is derived.
        .target(name: "JotterWire"),
        // OpenSSL's libcrypto from Debian (libssl-dev): SHA-256 (JotterSystem), SHA-1 for tus.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // Codable wire types shared by the server and the client SDK.
        .target(name: "JotterAPI", dependencies: ["JotterWire"]),
        // The application: configuration, controllers, `buildApplication`.
        // The web app's files (Web/app) are compiled in at build time: SwiftPM generates
        // `PackageResources`, a `[UInt8]` per file (no Foundation, no bundle to install).
        .target(
            name: "JotterServer", dependencies: ["JotterHTTP", "JotterAPI", "JotterStore", "JotterStoreHTTP", "JotterBlobs", "JotterSystem"],
            resources: [.embedInCode("Web/app")]),
        // The Swift SDK on URLSession (FoundationNetworking on Linux); shares only the wire types.
        // On Linux it hashes downloads with libcrypto (CryptoKit on Apple platforms). Its sync
        // engine keeps the replica in the system's SQLite (CSQLite: a module map, no flags).
        .target(
            name: "JotterClient",
            dependencies: [
                "JotterAPI", "CSQLite", .target(name: "JotterSystem", condition: .when(platforms: [.linux])),
                .target(name: "CTLS", condition: .when(platforms: [.linux])),
            ]),
        // OpenSSL's TLS client: the SDK's own HTTPS with a private CA (--cacert) or none (--insecure) on Linux.
        .systemLibrary(name: "CTLS", pkgConfig: "libssl", providers: [.apt(["libssl-dev"])]),
        // The command-line interface as a library, so commands are testable in-process.
        // The serve command and what every command shares (arguments, exit codes): no client SDK.
        .target(name: "JotterCLICore", dependencies: ["JotterServer", "JotterHTTP", "JotterStore", "JotterSystem"]),
        // The client commands over the SDK, and the `jotter` command line as a whole.
        .target(name: "JotterCLI", dependencies: ["JotterCLICore", "JotterServer", "JotterStore", "JotterClient", "JotterSystem", "CArchive"]),
        // libarchive from Debian (libarchive-dev), for the tar archives of `jotter export`/`import`.
        .systemLibrary(name: "CArchive", pkgConfig: "libarchive", providers: [.apt(["libarchive-dev"])]),
        .executableTarget(name: "jotter", dependencies: ["JotterCLI"]),
        // `jotter serve` without the client SDK: `jotter serve` runs it when it is beside `jotter`,
        // so the server process does not load Foundation and FoundationNetworking (9 MiB).
        .executableTarget(name: "jotter-server", dependencies: ["JotterCLICore"]),
        // SQLite from Debian (libsqlite3-dev), as a system library.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Persistence behind protocols (DataStore): SQLite with local files, PostgreSQL with a BlobStore.
        .target(name: "JotterStore", dependencies: ["CSQLite", "CSodium", "JotterBlobs", "JotterPostgres", "JotterSystem"]),
        // The store layer's side that meets requests: where an upload's bytes go while its body
        // arrives (a partial upload's storage, a file part streamed into the blob store) and
        // store failures as HTTP answers. Apart, so JotterStore knows no HTTP types.
        .target(name: "JotterStoreHTTP", dependencies: ["JotterHTTP", "JotterStore", "JotterBlobs", "JotterSystem"]),
        // libsodium from Debian (libsodium-dev): Argon2id password hashes, random tokens.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // libpq from Debian (libpq-dev), the PostgreSQL client library.
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // PostgreSQL over libpq: connections from a URL, a bounded pool, prepared statements with
        // text parameters, typed rows, transactions, errors classified by SQLSTATE.
        .target(name: "JotterPostgres", dependencies: ["CLibPQ"]),
        // libcurl from Debian (libcurl4-openssl-dev): HTTP and AWS SigV4 signing for S3.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // Blob storage behind `BlobStore`: a local folder and an S3-compatible bucket (libcurl).
        .target(name: "JotterBlobs", dependencies: ["CCurl", "JotterSystem"]),

        // The HTTP framework's testing helpers, apart from what the server ships: a connection's
        // state machine driven with byte arrays (`MemoryConnection`) and a router's whole
        // lifecycle with no socket (`InProcessClient`). They reach the engine's `package` API.
        .target(name: "JotterHTTPTesting", dependencies: ["JotterHTTP"]),
        // libFuzzer targets for the parsers (scripts/fuzz); built plainly, it replays a corpus.
        .executableTarget(name: "jotter-fuzz", dependencies: ["JotterHTTP", "JotterHTTPTesting", "JotterClient"], path: "Sources/jotter-fuzz"),
        // Test helpers that need no server: a raw-socket HTTP client, child processes (the
        // `jotter` binary, nginx, HAProxy, PostgreSQL's restart), a private CA, multipart bodies,
        // a small disk, the `timing` tag. Framework, PostgreSQL and blob tests build without the
        // application.
        .target(name: "JotterTestSupport", path: "Tests/JotterTestSupport"),
        // Test helpers around the application: a real server in process on a free port
        // (`TestApp`), a fresh PostgreSQL database and bucket (`SharedBackend`), a scale-out cluster.
        .target(
            name: "JotterServerTestSupport", dependencies: ["JotterTestSupport", "JotterServer", "JotterStore", "JotterPostgres"],
            path: "Tests/JotterServerTestSupport"),
        .testTarget(name: "JotterSystemTests", dependencies: ["JotterSystem"]),
        .testTarget(
            name: "JotterHTTPTests", dependencies: ["JotterHTTP", "JotterHTTPTesting", "JotterSystem", "JotterWire", "JotterTestSupport", "CNGHTTP2"]),
        .testTarget(
            name: "JotterServerTests",
            dependencies: [
                "JotterServer", "JotterHTTP", "JotterAPI", "JotterWire", "JotterStore", "JotterStoreHTTP", "JotterBlobs", "JotterSystem",
                "JotterTestSupport", "JotterServerTestSupport",
            ]),
        .testTarget(
            name: "JotterCLITests",
            dependencies: [
                "JotterCLI", "JotterCLICore", "jotter", "jotter-server", "JotterAPI", "JotterClient", "JotterServer",
                "JotterTestSupport", "JotterServerTestSupport", "JotterPostgres",
            ]),
        .testTarget(name: "JotterAPITests", dependencies: ["JotterAPI"]),
        .testTarget(
            name: "JotterStoreTests", dependencies: ["JotterStore", "CSQLite", "JotterPostgres", "JotterBlobs", "JotterSystem", "JotterTestSupport"]),
        .testTarget(name: "JotterPostgresTests", dependencies: ["JotterPostgres", "JotterTestSupport"]),
        .testTarget(name: "JotterBlobsTests", dependencies: ["JotterBlobs", "JotterTestSupport"]),
        .testTarget(
            name: "JotterClientTests",
            dependencies: ["JotterClient", "JotterServer", "JotterHTTP", "JotterSystem", "JotterTestSupport", "JotterServerTestSupport"]),
    ]
)
