/// A file part of a `multipart/form-data` request, already stored by the route's
/// `MultipartFileStore` (temporary files by default).
///
/// A temporary file is removed when the request completes unless a handler has moved it
/// elsewhere (as `/uploads` does, by renaming it into the uploads folder).
public struct UploadedFile: Sendable, Hashable {
    /// The form field name.
    public var field: String
    /// The client's file name, cleaned (`cleanFilename`): metadata, never a path.
    public var filename: String
    /// The part's Content-Type, `application/octet-stream` when it sent none.
    public var contentType: String
    public var size: Int64
    /// SHA-256 of the content, 64 lowercase hex digits.
    public var sha256: String
    /// Where the bytes are now (for temporary files, the file's path; owned by the request).
    public var location: String
    /// For a `text/*` part, whether its bytes are well-formed UTF-8; nil when not checked.
    public var isUTF8: Bool? = nil
    /// Whether the part's `filename` (or `filename*`) was empty: `filename` is then `upload`.
    public var sentEmptyFilename: Bool = false

    /// A file input left empty, as a browser sends it: `filename=""` and no bytes. Routes that
    /// store files take it as no file (as PHP and others do); a named empty file is a file.
    public var isEmptyFileInput: Bool { sentEmptyFilename && size == 0 }
}
