import Foundation
import JotterBlobs
import Testing

/// The blob stores the conformance suite runs against: a local folder always, and the S3
/// server scripts/test-services starts (SeaweedFS) when its variables are set (make test
/// always sets them).
enum Backend: String, CustomTestStringConvertible, CaseIterable, Sendable {
    case local, s3

    var testDescription: String { rawValue }

    static let environment = ProcessInfo.processInfo.environment
    static let s3Available = environment["JOTTER_TEST_S3_ENDPOINT"] != nil
    static let s3SkipMessage: Comment = "JOTTER_TEST_S3_ENDPOINT is not set: run under scripts/test-services (make test does)"

    /// Every backend this run can reach (S3 left out only outside scripts/test-services).
    static var available: [Backend] { s3Available ? [.local, .s3] : [.local] }

    static func s3Configuration(secret: String? = nil, partSize: Int = 5 << 20) -> S3BlobStore.Configuration {
        S3BlobStore.Configuration(
            bucket: environment["JOTTER_TEST_S3_BUCKET"]!, endpoint: environment["JOTTER_TEST_S3_ENDPOINT"]!,
            region: environment["JOTTER_TEST_S3_REGION"]!, accessKey: environment["JOTTER_TEST_S3_ACCESS_KEY"]!,
            secretKey: secret ?? environment["JOTTER_TEST_S3_SECRET_KEY"]!, partSize: partSize)
    }
}

/// A store of one backend and a key prefix no other test uses; a local store's folder is
/// removed afterwards.
final class BlobFixture {
    let store: any BlobStore
    let prefix = "t-\(UInt64.random(in: 0...UInt64.max))/"
    private let folder: String?

    init(_ backend: Backend) throws {
        switch backend {
        case .local:
            let folder = NSTemporaryDirectory() + "jotter-blobs-\(UUID().uuidString)"
            self.folder = folder
            store = try LocalBlobStore(root: folder)
        case .s3:
            folder = nil
            store = S3BlobStore(Backend.s3Configuration())
        }
    }

    deinit {
        if let folder {
            try? FileManager.default.removeItem(atPath: folder)
        } else {
            for blob in (try? store.list(prefix: prefix)) ?? [] { try? store.delete(blob.key) }
        }
    }

    func key(_ name: String) -> String { prefix + name }
}

/// Deterministic bytes: chunk `index` of a stream (so a reader can check what it gets).
func patternChunk(_ index: Int, size: Int) -> [UInt8] {
    var state = UInt64(index &+ 1) &* 0x9E3779B97F4A7C15
    return (0..<size).map { _ in
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        return UInt8(truncatingIfNeeded: state)
    }
}

/// Peak and current resident memory of this process (Linux /proc), in bytes.
enum ResidentMemory {
    /// Resets the peak to the current size (`clear_refs` 5), so a later `peak` measures only what follows.
    static func resetPeak() { try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8) }

    static var peak: Int { field("VmHWM") }
    static var current: Int { field("VmRSS") }

    private static func field(_ name: String) -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }),
            let kib = Int(line.split(separator: " ").dropFirst().first ?? "")
        else { return 0 }
        return kib * 1024
    }
}
