//! What a result is asked for in (spec 2.2.1, 4.5): format, scope, layout.

use sea_orm::sea_query::StringLen;

vocabulary! {
    /// A result's format (spec 2.2.1, 4.5).
    ResultFormat {
        Json = "json",
        Txt = "txt",
        TxtZip = "txt-zip",
        Epub = "epub",
        EpubBilingual = "epub-bilingual",
    }
}

impl ResultFormat {
    /// Formats a request without an EPUB original may ask for.
    pub const WITHOUT_EPUB: [ResultFormat; 4] = [
        ResultFormat::Json,
        ResultFormat::Txt,
        ResultFormat::TxtZip,
        ResultFormat::EpubBilingual,
    ];

    pub fn media_type(self) -> &'static str {
        match self {
            ResultFormat::Json => "application/json",
            ResultFormat::Txt => "text/plain; charset=utf-8",
            ResultFormat::TxtZip => "application/zip",
            ResultFormat::Epub | ResultFormat::EpubBilingual => "application/epub+zip",
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            ResultFormat::Json => "json",
            ResultFormat::Txt => "txt",
            ResultFormat::TxtZip => "zip",
            ResultFormat::Epub | ResultFormat::EpubBilingual => "epub",
        }
    }

    /// The format an `Accept` media type maps to (spec 4.5).
    pub fn from_media_type(media: &str) -> Option<ResultFormat> {
        match media {
            "application/epub+zip" => Some(ResultFormat::Epub),
            "application/json" => Some(ResultFormat::Json),
            "text/plain" => Some(ResultFormat::Txt),
            "application/zip" => Some(ResultFormat::TxtZip),
            _ => None,
        }
    }
}

vocabulary! {
    /// Which chapters a result covers (spec 4.5).
    ResultScope {
        /// The chapters the request sent (the whole book for an EPUB).
        Request = "request",
        /// Only chapters the request created or replaced.
        New = "new",
        /// Every chapter of the volume.
        Volume = "volume",
    }
}

vocabulary! {
    /// Page layout of a bilingual EPUB (spec 4.5).
    Layout {
        Interleaved = "interleaved",
        SideBySide = "side-by-side",
    }
}
