import Foundation
import Glibc

/// A tmpfs of a few MiB mounted on a temporary folder.
public struct SmallDisk: Sendable {
    public let path: String

    public init(megabytes: Int) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("jotter-small-disk-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        guard Self.run(["mount", "-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", path]) else {
            throw RawHTTP.Failure(message: "mount of a tmpfs on \(path) failed")
        }
    }

    /// Takes every free byte left, in a file outside the data folder.
    public func fill() {
        let fd = open(path + "/filler", O_WRONLY | O_CREAT, 0o600)
        guard fd >= 0 else { return }
        defer { close(fd) }
        let block = [UInt8](repeating: 0xEE, count: 64 << 10)
        var size = block.count
        while size > 0 {
            while write(fd, block, size) == size {}
            size /= 2
        }
    }

    public func unmount() {
        _ = Self.run(["umount", path])
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Whether a tmpfs can be mounted here (tried once).
    public static let canMount: Bool = {
        guard geteuid() == 0, let disk = try? SmallDisk(megabytes: 1) else { return false }
        disk.unmount()
        return true
    }()

    private static func run(_ arguments: [String]) -> Bool {
        (try? runProgram(arguments))?.status == 0
    }
}
