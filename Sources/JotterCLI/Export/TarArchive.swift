internal import CArchive
import Glibc
import JotterCLICore

/// A tar archive being written with libarchive (GNU tar format, gzip-compressed when asked —
/// by default when the name ends in `.gz` or `.tgz`). Files are streamed in, never held in
/// memory whole.
///
/// GNU format rather than pax: names are stored as their UTF-8 bytes, with no conversion
/// through the C locale (libarchive 3.6's UTF-8 path setter crashes in the "C" locale, and
/// pax then marks non-ASCII names `hdrcharset=BINARY`, which GNU tar warns about).
///
/// ```swift
/// let tar = try TarWriter(path: "notes.tar")
/// try tar.add("jotter-export/manifest.json", bytes: json)
/// try tar.add("jotter-export/notes/1/photo.png", file: "/tmp/photo.png", size: 1234)
/// try tar.finish()
/// ```
final class TarWriter {
    private var archive: OpaquePointer?
    let path: String

    /// Whether an archive named `name` is gzip-compressed: it ends in `.gz` or `.tgz`.
    static func isGzip(_ name: String) -> Bool { name.hasSuffix(".gz") || name.hasSuffix(".tgz") }

    /// Refuses a file name whose extension promises another format (`notes.zip`): an archive
    /// is named `.tar`, `.tar.gz` or `.tgz`, or has no extension.
    static func checkName(_ path: String) throws(UsageError) {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return }
        let lower = name.lowercased()
        guard !(lower.hasSuffix(".tar") || lower.hasSuffix(".tar.gz") || lower.hasSuffix(".tgz")) else { return }
        throw UsageError("\(path): jotter export writes a tar archive; name it .tar, or .tar.gz or .tgz for gzip, not \(name[dot...])")
    }

    /// Writes to `path`; `gzip` says whether to compress (say it when `path` is a temporary
    /// name for the final one).
    init(path: String, gzip: Bool? = nil) throws {
        self.path = path
        archive = archive_write_new()
        archive_write_set_format_gnutar(archive)
        if gzip ?? Self.isGzip(path) { archive_write_add_filter_gzip(archive) }
        guard archive_write_open_filename(archive, path) == ARCHIVE_OK else {
            let message = Self.message(archive)
            archive_write_free(archive)
            archive = nil
            throw CommandFailure("cannot write \(path): \(message)")
        }
    }

    deinit { if archive != nil { archive_write_free(archive) } }

    /// A file of `bytes`.
    func add(_ name: String, bytes: [UInt8], modified: Int64) throws {
        try header(name, size: Int64(bytes.count), modified: modified)
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// A file with the content of the file at `source`, `size` bytes long.
    func add(_ name: String, file source: String, size: Int64, modified: Int64) throws {
        try header(name, size: size, modified: modified)
        let fd = open(source, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CommandFailure("cannot read \(source): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var left = size
        while left > 0 {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, Int(left))) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw CommandFailure("\(source) is shorter than \(size) bytes") }
            try buffer.withUnsafeBytes { try write(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
            left -= Int64(count)
        }
    }

    /// Writes the end of the archive and closes it.
    func finish() throws {
        let status = archive_write_close(archive)
        let message = Self.message(archive)
        archive_write_free(archive)
        archive = nil
        guard status == ARCHIVE_OK else { throw CommandFailure("cannot finish \(path): \(message)") }
    }

    private func header(_ name: String, size: Int64, modified: Int64) throws {
        let entry = archive_entry_new()
        defer { archive_entry_free(entry) }
        archive_entry_copy_pathname(entry, name)  // the UTF-8 bytes as they are
        archive_entry_set_size(entry, size)
        archive_entry_set_filetype(entry, 0o100000)  // AE_IFREG, a macro with a cast Swift can't import
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_mtime(entry, time_t(modified), 0)
        guard archive_write_header(archive, entry) == ARCHIVE_OK else {
            throw CommandFailure("cannot write \(name) into \(path): \(Self.message(archive))")
        }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        guard archive_write_data(archive, bytes.baseAddress, bytes.count) == bytes.count else {
            throw CommandFailure("cannot write into \(path): \(Self.message(archive))")
        }
    }

    fileprivate static func message(_ archive: OpaquePointer?) -> String {
        archive_error_string(archive).map { String(cString: $0) } ?? "error \(archive_errno(archive))"
    }
}

/// A tar archive read with libarchive, member by member (any compression libarchive knows).
///
/// ```swift
/// let tar = try TarReader(path: "notes.tar")
/// while let member = try tar.next() { try tar.read { chunk in … } }
/// ```
final class TarReader {
    struct Member {
        var name: String
        var size: Int64
        var isFile: Bool
    }

    private var archive: OpaquePointer?
    let path: String

    init(path: String) throws {
        self.path = path
        archive = archive_read_new()
        archive_read_support_filter_all(archive)
        archive_read_support_format_tar(archive)
        guard archive_read_open_filename(archive, path, 1 << 16) == ARCHIVE_OK else {
            let message = TarWriter.message(archive)
            archive_read_free(archive)
            archive = nil
            throw CommandFailure("\(path) is not a readable archive: \(message)")
        }
    }

    deinit { if archive != nil { archive_read_free(archive) } }

    /// The next member, or nil at the end.
    func next() throws -> Member? {
        var entry: OpaquePointer?
        switch archive_read_next_header(archive, &entry) {
        case ARCHIVE_OK, ARCHIVE_WARN:
            // The bytes as stored (UTF-8, as written above): no conversion through the locale.
            let name = archive_entry_pathname(entry).map { String(cString: $0) } ?? ""
            return Member(name: name, size: archive_entry_size(entry), isFile: archive_entry_filetype(entry) == 0o100000)
        case ARCHIVE_EOF:
            return nil
        default:
            throw CommandFailure("\(path) is not a readable archive: \(TarWriter.message(archive))")
        }
    }

    /// The current member's bytes, chunk by chunk.
    func read(_ chunk: (UnsafeRawBufferPointer) throws -> Void) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { archive_read_data(archive, $0.baseAddress, $0.count) }
            if count == 0 { return }
            guard count > 0 else { throw CommandFailure("\(path) is damaged: \(TarWriter.message(archive))") }
            try buffer.withUnsafeBytes { try chunk(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
        }
    }
}
