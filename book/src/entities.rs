//! HTML named character references that real EPUBs use without declaring them
//! (`&nbsp;`, `&mdash;`, `&eacute;`, …). XML knows only five; an XHTML file that
//! relies on the HTML set is not well-formed, but readers open it, so we map the
//! HTML 4 set (Latin-1, symbols, Greek, punctuation) and leave any other name as
//! it is (the writer copies its raw bytes back).

use std::collections::HashMap;
use std::sync::LazyLock;

const LATIN1: &str = "nbsp iexcl cent pound curren yen brvbar sect uml copy ordf laquo not shy reg macr deg plusmn sup2 sup3 acute micro para middot cedil sup1 ordm raquo frac14 frac12 frac34 iquest Agrave Aacute Acirc Atilde Auml Aring AElig Ccedil Egrave Eacute Ecirc Euml Igrave Iacute Icirc Iuml ETH Ntilde Ograve Oacute Ocirc Otilde Ouml times Oslash Ugrave Uacute Ucirc Uuml Yacute THORN szlig agrave aacute acirc atilde auml aring aelig ccedil egrave eacute ecirc euml igrave iacute icirc iuml eth ntilde ograve oacute ocirc otilde ouml divide oslash ugrave uacute ucirc uuml yacute thorn yuml";

const GREEK_UPPER: &str = "Alpha Beta Gamma Delta Epsilon Zeta Eta Theta Iota Kappa Lambda Mu Nu Xi Omicron Pi Rho - Sigma Tau Upsilon Phi Chi Psi Omega";
const GREEK_LOWER: &str = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigmaf sigma tau upsilon phi chi psi omega";

const OTHERS: &[(&str, u32)] = &[
    ("quot", 34),
    ("amp", 38),
    ("apos", 39),
    ("lt", 60),
    ("gt", 62),
    ("OElig", 338),
    ("oelig", 339),
    ("Scaron", 352),
    ("scaron", 353),
    ("Yuml", 376),
    ("fnof", 402),
    ("circ", 710),
    ("tilde", 732),
    ("thetasym", 977),
    ("upsih", 978),
    ("piv", 982),
    ("ensp", 8194),
    ("emsp", 8195),
    ("thinsp", 8201),
    ("zwnj", 8204),
    ("zwj", 8205),
    ("lrm", 8206),
    ("rlm", 8207),
    ("ndash", 8211),
    ("mdash", 8212),
    ("lsquo", 8216),
    ("rsquo", 8217),
    ("sbquo", 8218),
    ("ldquo", 8220),
    ("rdquo", 8221),
    ("bdquo", 8222),
    ("dagger", 8224),
    ("Dagger", 8225),
    ("bull", 8226),
    ("hellip", 8230),
    ("permil", 8240),
    ("prime", 8242),
    ("Prime", 8243),
    ("lsaquo", 8249),
    ("rsaquo", 8250),
    ("oline", 8254),
    ("frasl", 8260),
    ("euro", 8364),
    ("image", 8465),
    ("weierp", 8472),
    ("real", 8476),
    ("trade", 8482),
    ("alefsym", 8501),
    ("larr", 8592),
    ("uarr", 8593),
    ("rarr", 8594),
    ("darr", 8595),
    ("harr", 8596),
    ("crarr", 8629),
    ("lArr", 8656),
    ("uArr", 8657),
    ("rArr", 8658),
    ("dArr", 8659),
    ("hArr", 8660),
    ("forall", 8704),
    ("part", 8706),
    ("exist", 8707),
    ("empty", 8709),
    ("nabla", 8711),
    ("isin", 8712),
    ("notin", 8713),
    ("ni", 8715),
    ("prod", 8719),
    ("sum", 8721),
    ("minus", 8722),
    ("lowast", 8727),
    ("radic", 8730),
    ("prop", 8733),
    ("infin", 8734),
    ("ang", 8736),
    ("and", 8743),
    ("or", 8744),
    ("cap", 8745),
    ("cup", 8746),
    ("int", 8747),
    ("there4", 8756),
    ("sim", 8764),
    ("cong", 8773),
    ("asymp", 8776),
    ("ne", 8800),
    ("equiv", 8801),
    ("le", 8804),
    ("ge", 8805),
    ("sub", 8834),
    ("sup", 8835),
    ("nsub", 8836),
    ("sube", 8838),
    ("supe", 8839),
    ("oplus", 8853),
    ("otimes", 8855),
    ("perp", 8869),
    ("sdot", 8901),
    ("lceil", 8968),
    ("rceil", 8969),
    ("lfloor", 8970),
    ("rfloor", 8971),
    ("lang", 9001),
    ("rang", 9002),
    ("loz", 9674),
    ("spades", 9824),
    ("clubs", 9827),
    ("hearts", 9829),
    ("diams", 9830),
];

static TABLE: LazyLock<HashMap<&'static str, String>> = LazyLock::new(|| {
    let mut m = HashMap::new();
    for (i, name) in LATIN1.split(' ').enumerate() {
        if let Some(c) = char::from_u32(160 + i as u32) {
            m.insert(name, c.to_string());
        }
    }
    for (base, names) in [(913u32, GREEK_UPPER), (945u32, GREEK_LOWER)] {
        for (i, name) in names.split(' ').enumerate() {
            if name != "-"
                && let Some(c) = char::from_u32(base + i as u32)
            {
                m.insert(name, c.to_string());
            }
        }
    }
    for (name, cp) in OTHERS {
        if let Some(c) = char::from_u32(*cp) {
            m.insert(*name, c.to_string());
        }
    }
    m
});

/// The text of a named reference (`nbsp` → U+00A0), XML's five included.
pub fn lookup(name: &str) -> Option<&'static str> {
    TABLE.get(name).map(String::as_str)
}

#[cfg(test)]
mod tests {
    #[test]
    fn common_entities_resolve() {
        assert_eq!(super::lookup("nbsp"), Some("\u{a0}"));
        assert_eq!(super::lookup("eacute"), Some("é"));
        assert_eq!(super::lookup("yuml"), Some("ÿ"));
        assert_eq!(super::lookup("omega"), Some("ω"));
        assert_eq!(super::lookup("Omega"), Some("Ω"));
        assert_eq!(super::lookup("mdash"), Some("—"));
        assert_eq!(super::lookup("amp"), Some("&"));
        assert_eq!(super::lookup("foo"), None);
    }
}
