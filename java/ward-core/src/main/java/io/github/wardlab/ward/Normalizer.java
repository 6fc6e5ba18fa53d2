package io.github.wardlab.ward;

import com.ibm.icu.lang.UCharacter;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

/**
 * A named normalisation of a blind index's values ({@code field.Normalizer}
 * in Go): the name and version go into the index's key, so two indexes of
 * one column that normalise differently never share a key. {@link #NFC} and
 * {@link #FOLD} are the Go library's, and {@link #prefix} their prefix forms.
 *
 * @param name    1 to 64 of a-z 0-9 . _ : + -; an application's own takes a name of its own ({@code app:phone})
 * @param version changes whenever the function's output does
 * @param func    the normalisation of a value (well-formed text)
 */
public record Normalizer(String name, int version, UnaryOperator<String> func) {
    private static final Pattern NAME = Pattern.compile("^[a-z0-9._:+-]{1,64}$");
    private static final String PREFIX = "+prefix-";
    /** The longest prefix, in code points. */
    public static final int MAX_PREFIX = 256;

    /** Unicode normalisation form C: canonically equivalent strings index equally. The default. */
    public static final Normalizer NFC = new Normalizer("nfc", 1, Normalizer::nfc);

    /** White space trimmed (Go's unicode.IsSpace), NFKC, then full Unicode case folding: e-mail addresses, user names. */
    public static final Normalizer FOLD = new Normalizer("fold", 1, Normalizer::fold);

    /** Checks the name and version. */
    public Normalizer {
        if (name == null || !NAME.matcher(name).matches() || version < 1 || func == null) {
            throw new WardException.Binding("a blind index normaliser needs a name (1 to 64 of a-z 0-9 . _ : + -), a version from 1 and a function");
        }
        int at = name.indexOf(PREFIX);
        if (at >= 0) {
            prefixLength(name.substring(at + PREFIX.length()), name);
        }
    }

    /** The normaliser that keeps the first n code points (1 to 256) of base's output, named {@code <base>+prefix-<n>}. */
    public static Normalizer prefix(int n, Normalizer base) {
        if (n < 1 || n > MAX_PREFIX) {
            throw new WardException.Binding("a prefix length is 1 to " + MAX_PREFIX);
        }
        UnaryOperator<String> f = base.func();
        return new Normalizer(base.name() + PREFIX + n, base.version(), s -> {
            String out = f.apply(s);
            int cps = out.codePointCount(0, out.length());
            return cps <= n ? out : out.substring(0, out.offsetByCodePoints(0, n));
        });
    }

    /** The Go library's normaliser a recorded name and version name: nfc or fold, either with +prefix-N. */
    public static Normalizer parse(String name, int version) {
        int at = name.indexOf(PREFIX);
        String base = at < 0 ? name : name.substring(0, at);
        Normalizer n = switch (base) {
            case "nfc" -> NFC;
            case "fold" -> FOLD;
            default -> throw new WardException.Binding("normaliser " + Wire.clip(name, 70) + " is not one of the library's (nfc, fold, with +prefix-N)");
        };
        if (version != n.version()) {
            throw new WardException.UnsupportedVersion("normaliser " + base + " version " + version + ", this release knows version " + n.version());
        }
        return at < 0 ? n : prefix(prefixLength(name.substring(at + PREFIX.length()), name), n);
    }

    private static int prefixLength(String digits, String name) {
        if (!digits.matches("[1-9][0-9]{0,2}") || Integer.parseInt(digits) > MAX_PREFIX) {
            throw new WardException.Binding("normaliser " + Wire.clip(name, 70) + ": the prefix length is 1 to " + MAX_PREFIX);
        }
        return Integer.parseInt(digits);
    }

    static String nfc(String s) {
        return java.text.Normalizer.isNormalized(s, java.text.Normalizer.Form.NFC) ? s : java.text.Normalizer.normalize(s, java.text.Normalizer.Form.NFC);
    }

    static String fold(String s) {
        s = trimSpace(s);
        if (!java.text.Normalizer.isNormalized(s, java.text.Normalizer.Form.NFKC)) {
            s = java.text.Normalizer.normalize(s, java.text.Normalizer.Form.NFKC);
        }
        return UCharacter.foldCase(s, UCharacter.FOLD_CASE_DEFAULT);
    }

    /** Go's strings.TrimSpace: the white space of unicode.IsSpace off both ends. */
    static String trimSpace(String s) {
        int i = 0, j = s.length();
        while (i < j && isSpace(s.codePointAt(i))) {
            i += Character.charCount(s.codePointAt(i));
        }
        while (j > i && isSpace(s.codePointBefore(j))) {
            j -= Character.charCount(s.codePointBefore(j));
        }
        return s.substring(i, j);
    }

    /** Go's unicode.IsSpace: the Latin-1 spaces, else the White_Space property. */
    static boolean isSpace(int c) {
        if (c <= 0xff) {
            return c == ' ' || (c >= '\t' && c <= '\r') || c == 0x85 || c == 0xa0;
        }
        return c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
    }
}
