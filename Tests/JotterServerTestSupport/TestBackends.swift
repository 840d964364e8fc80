import Foundation
import JotterPostgres
import JotterServer
import JotterStore

/// A server's shared backends for a test: a fresh database on the PostgreSQL of
/// scripts/test-services (dropped afterwards) and its S3 bucket (SeaweedFS), as
/// `jotter serve --database … --blob-store …` would be given them.
///
/// ```swift
/// let backend = try SharedBackend()
/// try TestApp.with(configure: backend.configure) { app in … }
/// ```
public final class SharedBackend: Sendable {
    static let environment = ProcessInfo.processInfo.environment

    /// The test PostgreSQL server's URL, when scripts/test-services gave one.
    public static let postgresURL = environment["JOTTER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    /// Both the database and the bucket are there (`make test` always runs under scripts/test-services).
    public static var available: Bool { postgresURL != nil && environment["JOTTER_TEST_S3_ENDPOINT"] != nil }
    public static let skipMessage = "JOTTER_TEST_POSTGRES_URL / JOTTER_TEST_S3_ENDPOINT are not set: run under scripts/test-services (make test does)"

    /// The fresh database.
    public let databaseName: String
    public let databaseURL: String
    /// `s3://BUCKET?endpoint=…&region=…` of the test bucket.
    public let blobStoreURL: String
    /// The `AWS_*` credentials the bucket wants.
    public let credentials: [String: String]

    public init() throws {
        guard let server = Self.postgresURL, let endpoint = Self.environment["JOTTER_TEST_S3_ENDPOINT"] else {
            throw SkipError(message: Self.skipMessage)
        }
        databaseName = "jotter_server_\(UInt64.random(in: 0...UInt64.max))"
        let admin = try PostgresConnection(url: server)
        _ = try admin.execute("CREATE DATABASE \(databaseName)")
        var components = URLComponents(string: server)!
        components.path = "/" + databaseName
        databaseURL = components.string!
        let bucket = Self.environment["JOTTER_TEST_S3_BUCKET"]!, region = Self.environment["JOTTER_TEST_S3_REGION"]!
        blobStoreURL = "s3://\(bucket)?endpoint=\(endpoint)&region=\(region)"
        credentials = [
            "AWS_ACCESS_KEY_ID": Self.environment["JOTTER_TEST_S3_ACCESS_KEY"]!,
            "AWS_SECRET_ACCESS_KEY": Self.environment["JOTTER_TEST_S3_SECRET_KEY"]!,
        ]
    }

    deinit {
        guard let server = Self.postgresURL, let admin = try? PostgresConnection(url: server) else { return }
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(databaseName) WITH (FORCE)")
    }

    /// Points an in-process server at the database and the bucket.
    public func configure(_ configuration: inout ServerConfiguration) {
        configuration.database = .postgres(url: databaseURL, poolSize: 4)
        configuration.blobStore = blobStoreURL
        configuration.environment.merge(credentials) { _, new in new }
    }

    /// The same, as `jotter serve` arguments and environment.
    public var arguments: [String] { ["--database", databaseURL, "--blob-store", blobStoreURL] }
    public var processEnvironment: [String: String] { Self.environment.merging(credentials) { _, new in new } }

    public struct SkipError: Error, CustomStringConvertible {
        public let message: String
        public var description: String { message }
    }
}
