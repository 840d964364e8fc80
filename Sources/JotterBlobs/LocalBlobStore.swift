#if canImport(Glibc)
import Glibc
#endif

/// Blobs as files under one folder (the single-machine default): a key is a relative path.
///
/// `put` writes a temporary file in the folder (`.tmp-…`, on the same file system), fsyncs it,
/// renames it over the key's path and fsyncs the directory, so the object appears whole or not
/// at all and survives a crash once `put` returns. The ETag is made from size and modification
/// time (no second read of the bytes).
public struct LocalBlobStore: BlobStore {
    /// The folder, created if missing.
    public let root: String

    private static let temporaryPrefix = ".tmp-"

    public init(root: String) throws {
        self.root = root
        try Self.makeDirectories(root)
    }

    /// The file behind `key`.
    public func path(for key: String) throws -> String {
        try validateBlobKey(key)
        return root + "/" + key
    }

    @discardableResult
    public func put(_ key: String, chunks next: () throws -> [UInt8]?) throws -> BlobInfo {
        let (destination, directory) = try place(for: key)
        let temporary = directory + "/" + Self.temporaryPrefix + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        do {
            let file = try BlobFile(creating: temporary)
            while let chunk = try next() { try file.write(chunk) }
            try file.sync()
            guard rename(temporary, destination) == 0 else { throw BlobError.io("rename: \(errorText())") }
        } catch {
            unlink(temporary)
            throw error
        }
        return try settled(key, in: directory)
    }

    /// Moves the file into place: fsync, `rename` (the file must be on the same file system
    /// as `root`, as the data folder's `tmp/` is; otherwise its bytes are copied), fsync of the
    /// folder. The move is atomic: the key holds the old object or the new one, never a part.
    @discardableResult
    public func put(_ key: String, movingFile path: String) throws -> BlobInfo {
        let (destination, directory) = try place(for: key)
        let file = try BlobFile(readingFrom: path)
        try file.sync()
        guard rename(path, destination) == 0 else {
            guard errno == EXDEV else { throw BlobError.io("rename: \(errorText())") }
            let info = try put(key, contentsOfFile: path)
            unlink(path)
            return info
        }
        return try settled(key, in: directory)
    }

    @discardableResult
    public func get(
        _ key: String, range: ClosedRange<Int64>?, opened: (BlobInfo) throws -> Void,
        into sink: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> BlobInfo {
        let path = try path(for: key)
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw BlobError.notFound(key) }
            throw BlobError.io("\(path): \(errorText())")
        }
        let file = BlobFile(adopting: descriptor)
        guard let info = try Self.info(key, descriptor: file.descriptor) else { throw BlobError.notFound(key) }
        var offset = range?.lowerBound ?? 0
        let end = min(range?.upperBound ?? info.size - 1, info.size - 1)  // inclusive
        if range != nil && offset >= info.size { throw BlobError.invalidRange }
        try opened(info)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 18, alignment: 16)
        defer { buffer.deallocate() }
        while offset <= end {
            let want = Int(min(Int64(buffer.count), end - offset + 1))
            let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
            if n == 0 { break }
            try sink(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        return info
    }

    public func head(_ key: String) throws -> BlobInfo? {
        var status = stat()
        guard stat(try path(for: key), &status) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw BlobError.io(errorText())
        }
        return Self.info(key, status)
    }

    public func delete(_ key: String) throws {
        guard unlink(try path(for: key)) == 0 || errno == ENOENT || errno == ENOTDIR else {
            throw BlobError.io("unlink: \(errorText())")
        }
    }

    public func list(prefix: String) throws -> [BlobInfo] {
        var found: [BlobInfo] = []
        try walk("", prefix: prefix, into: &found)
        return found.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
    }

    // MARK: - Files

    /// What `key` holds once a file has been renamed to it in `directory`: the rename made
    /// durable (fsync of the folder), then the object's size and ETag.
    private func settled(_ key: String, in directory: String) throws -> BlobInfo {
        try Self.syncDirectory(directory)
        guard let info = try head(key) else { throw BlobError.notFound(key) }
        return info
    }

    /// The file behind `key` and its folder, created if missing.
    private func place(for key: String) throws -> (path: String, directory: String) {
        let destination = try path(for: key)
        let directory = String(destination[..<destination.lastIndex(of: "/")!])
        try Self.makeDirectories(directory)
        return (destination, directory)
    }

    private func walk(_ relative: String, prefix: String, into found: inout [BlobInfo]) throws {
        let directory = relative.isEmpty ? root : root + "/" + relative
        guard let stream = opendir(directory) else {
            if errno == ENOENT { return }
            throw BlobError.io("\(directory): \(errorText())")
        }
        defer { closedir(stream) }
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name == "." || name == ".." || name.hasPrefix(Self.temporaryPrefix) { continue }
            let key = relative.isEmpty ? name : relative + "/" + name
            // Only go down folders that can hold keys with the prefix.
            guard key.hasPrefix(prefix) || prefix.hasPrefix(key + "/") else { continue }
            var status = stat()
            guard stat(root + "/" + key, &status) == 0 else { continue }
            if (status.st_mode & S_IFMT) == S_IFDIR {
                try walk(key, prefix: prefix, into: &found)
            } else if key.hasPrefix(prefix) {
                found.append(Self.info(key, status))
            }
        }
    }

    private static func info(_ key: String, descriptor: Int32) throws -> BlobInfo? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw BlobError.io(errorText()) }
        return info(key, status)
    }

    private static func info(_ key: String, _ status: stat) -> BlobInfo {
        let modified = Int64(status.st_mtim.tv_sec) * 1_000_000_000 + Int64(status.st_mtim.tv_nsec)
        let etag = "\"" + String(UInt64(status.st_size), radix: 16) + "-" + String(UInt64(bitPattern: modified), radix: 16) + "\""
        return BlobInfo(key: key, size: Int64(status.st_size), etag: etag, modified: Int64(status.st_mtim.tv_sec))
    }

    private static func makeDirectories(_ path: String) throws {
        var built = path.hasPrefix("/") ? "" : "."
        for segment in path.split(separator: "/") {
            built += "/" + segment
            if mkdir(built, 0o755) != 0 && errno != EEXIST { throw BlobError.io("mkdir \(built): \(errorText())") }
        }
    }

    private static func syncDirectory(_ path: String) throws {
        let descriptor = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BlobError.io("\(path): \(errorText())") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw BlobError.io("fsync \(path): \(errorText())") }
    }
}

// MARK: - Capabilities

extension LocalBlobStore {
    /// Files on this machine's disk: reading them does not wait on the network.
    public var readsBlock: Bool { false }

    /// The descriptor of the object's file: no file is `notFound`; another failure (no
    /// descriptor left, no permission, the disk) is `io`, not a missing object.
    public func open(_ key: String, offset: Int64, length: Int64, bufferLimit: Int) throws -> BlobOpening {
        let path = try path(for: key)
        let descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT || errno == ENOTDIR { throw BlobError.notFound(key) }
            throw BlobError.io("\(path): \(errorText())")
        }
        return .file(descriptor: descriptor)
    }

    /// Nothing to reach: the folder is the data folder's.
    public func reachability() -> String? { nil }

    /// None: a file part arrives in a temporary file, renamed into place by `put(_:movingFile:)`.
    public var multipart: (any BlobMultipart)? { nil }
}
