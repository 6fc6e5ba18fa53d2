package io.github.wardlab.ward;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The valid records of one database read from a forget journal (Go's
 * {@code forgetlog.Records}): each line parsed and its MAC checked, the
 * private records kept by namespace and subject hash, and the chains of
 * tallies they form. Not safe for concurrent use ({@link ForgetJournal}
 * locks it).
 */
final class JournalRecords {
    /** The key versions a record may name. */
    static final int MAX_KEYS = 64;

    /** What checks a record's MAC: the key it is under, and whether its epoch ended. */
    interface Checker {
        /** The MAC key of r (its epoch's integrity key for a chained one), or null when the keyring cannot give it. */
        byte[] macKey(Rec r);

        /** Whether the keyring retired that epoch's key. */
        boolean ended(long epoch);
    }

    /**
     * One record as read.
     *
     * @param subject the subject hash (hex)
     * @param chained a forget v3 or private v2 record: prev is the tally before its event
     * @param isPrivate a subject gone private, not a forget
     * @param prev the tally before (chained records)
     * @param epoch the integrity epoch its MAC is under (chained records)
     * @param keys the key versions field as written (forget v2 and v3), or null
     * @param proven false for a chained record of a retired epoch: its MAC cannot be checked
     */
    record Rec(String subject, boolean chained, boolean isPrivate, Tally prev, long epoch, String keys, boolean proven) {
        /** The tally after the record's event: prev with the subject hash (and, for a forget, its key versions as written) added. */
        Tally next() {
            byte[] id = hexBytes(subject);
            return prev.add(isPrivate ? id : Wire.concat(id, keys.getBytes(StandardCharsets.US_ASCII)));
        }

        Rec proven(boolean p) {
            return new Rec(subject, chained, isPrivate, prev, epoch, keys, p);
        }
    }

    /** A namespace's private records, and the records on the chain back from the tally asked last. */
    private static final class Private {
        final List<Rec> recs = new ArrayList<>();
        final Map<String, List<Rec>> bySubject = new HashMap<>();
        Set<Rec> onChain;
        Tally chainOf;
        int chainLen;
    }

    private final String database;
    private final Checker checker;
    private final Map<String, Private> privates = new HashMap<>(); // hex(namespace) → its private records
    int invalid;

    JournalRecords(String database, Checker checker) {
        this.database = database;
        this.checker = checker;
    }

    /** Parses one complete line (n bytes of line, its newline last), counting it invalid, of another database, or keeping it. */
    void add(byte[] line, int n) {
        String text = new String(line, 0, n - 1, StandardCharsets.ISO_8859_1); // bytes as they are: a MAC covers them
        String[] f = text.split(" ", -1);
        Rec r = parse(f);
        if (r == null) {
            invalid++;
            return;
        }
        boolean proven = macOK(line, text.lastIndexOf(' '), f[f.length - 1], r);
        if (!proven && (!r.chained() || !checker.ended(r.epoch()))) {
            invalid++;
            return;
        }
        r = r.proven(proven);
        if (!f[1].equals(database) || !r.isPrivate()) {
            return; // another database's, or a forget: ward-java reads only private records
        }
        Private p = privates.computeIfAbsent(f[2].toLowerCase(java.util.Locale.ROOT), x -> new Private());
        p.recs.add(r);
        p.bySubject.computeIfAbsent(r.subject(), x -> new ArrayList<>()).add(r);
    }

    /** The MAC as written (lower-case hex), checked in constant time over the line up to the space before it. */
    private boolean macOK(byte[] line, int end, String mac, Rec r) {
        byte[] key = checker.macKey(r);
        if (key == null) {
            return false;
        }
        byte[] want = Wire.hex(ForgetJournal.hmac(key, line, end)).getBytes(StandardCharsets.US_ASCII);
        return MessageDigest.isEqual(want, mac.getBytes(StandardCharsets.ISO_8859_1));
    }

    /** A namespace's private records of a subject hash (hex). */
    List<Rec> privateOf(String namespaceHex, String subject) {
        Private p = privates.get(namespaceHex);
        return p == null ? List.of() : List.copyOf(p.bySubject.getOrDefault(subject, List.of()));
    }

    /** The namespace's private records on the chain back from t (each tally has at most one before it: its head hashes it). */
    Set<Rec> committed(String namespaceHex, Tally from) {
        Private p = privates.get(namespaceHex);
        if (p == null) {
            return Set.of();
        }
        if (p.onChain != null && from.equals(p.chainOf) && p.chainLen == p.recs.size()) {
            return p.onChain;
        }
        Map<Tally, List<Rec>> byNext = new HashMap<>();
        for (Rec r : p.recs) {
            if (r.chained()) {
                byNext.computeIfAbsent(r.next(), x -> new ArrayList<>()).add(r);
            }
        }
        Set<Rec> on = new HashSet<>();
        Tally t = from;
        while (Long.compareUnsigned(t.count(), t.since()) > 0) {
            List<Rec> is = byNext.get(t);
            if (is == null) {
                break;
            }
            on.addAll(is);
            t = is.get(0).prev();
        }
        p.onChain = on;
        p.chainOf = from;
        p.chainLen = p.recs.size();
        return on;
    }

    /**
     * A line's fields but its MAC's check, or null: v1 and private v1 (6
     * fields), forget v2 (7: the key versions), private v2 (8: the tally
     * before and the epoch), forget v3 (9: the key versions or "*", the
     * tally before and the epoch).
     */
    static Rec parse(String[] f) {
        if (f.length < 6) {
            return null;
        }
        boolean chained = false, isPrivate = false;
        Tally prev = null;
        long epoch = 0;
        String keys = null;
        switch (f[0] + "/" + f.length) {
            case "ward-forget-v3/9" -> {
                keys = f[4];
                if (!keys.equals("*") && !keysOK(keys)) {
                    return null;
                }
                prev = parseTally(f[5]);
                epoch = parseEpoch(f[6]);
                chained = true;
            }
            case "ward-private-v2/8" -> {
                prev = parseTally(f[4]);
                epoch = parseEpoch(f[5]);
                chained = isPrivate = true;
            }
            case "ward-forget-v2/7" -> {
                if (!keysOK(f[4])) {
                    return null;
                }
                keys = f[4];
            }
            case "ward-forget-v1/6" -> { }
            case "ward-private-v1/6" -> isPrivate = true;
            default -> {
                return null;
            }
        }
        if (chained && (prev == null || epoch < 0)) {
            return null;
        }
        if (!isHex(f[2], false) || !isHex(f[3], true) || f[3].length() != 64 || !isTime(f[f.length - 2])) {
            return null;
        }
        return new Rec(f[3], chained, isPrivate, prev, epoch, keys, false);
    }

    /** Key versions as a record spells them: "-", or up to 64 of 8 lower-case hex digits, ascending, comma-separated. */
    static boolean keysOK(String s) {
        if (s.equals("-")) {
            return true;
        }
        String[] parts = s.split(",", -1);
        if (parts.length > MAX_KEYS) {
            return false;
        }
        long last = -1;
        for (String p : parts) {
            if (p.length() != 8 || !isHex(p, true)) {
                return false;
            }
            long v = Long.parseLong(p, 16);
            if (v < last) {
                return false;
            }
            last = v;
        }
        return true;
    }

    /** A tally as a record spells it ({@code count/since/head}), refusing any other spelling or an invalid tally; null if not. */
    static Tally parseTally(String s) {
        String[] p = s.split("/", -1);
        if (p.length != 3 || !isDecimal(p[0]) || !isDecimal(p[1])) {
            return null;
        }
        Tally t;
        try {
            byte[] head = p[2].equals("-") ? null : p[2].length() == 64 && isHex(p[2], true) ? hexBytes(p[2]) : new byte[1];
            t = new Tally(Long.parseUnsignedLong(p[0]), Long.parseUnsignedLong(p[1]), head);
        } catch (NumberFormatException e) {
            return null;
        }
        return t.valid() && t.count() != -1 && t.toString().equals(s) ? t : null;
    }

    /** An integrity epoch as a record spells it (8 lower-case hex digits), or -1. */
    static long parseEpoch(String s) {
        return s.length() == 8 && isHex(s, true) ? Long.parseLong(s, 16) : -1;
    }

    private static boolean isDecimal(String s) {
        return !s.isEmpty() && s.chars().allMatch(c -> c >= '0' && c <= '9');
    }

    /** Unix seconds as Go's strconv.ParseInt reads them: an optional sign, then decimal digits, within 64 bits. */
    private static boolean isTime(String s) {
        String d = s.startsWith("+") || s.startsWith("-") ? s.substring(1) : s;
        if (!isDecimal(d)) {
            return false;
        }
        try {
            Long.parseLong(s);
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    /** Whether s is hex of whole bytes, lower case only when lowerOnly (Go's hex.DecodeString takes either case). */
    private static boolean isHex(String s, boolean lowerOnly) {
        return s.length() % 2 == 0 && s.chars().allMatch(c -> (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (!lowerOnly && c >= 'A' && c <= 'F'));
    }

    static byte[] hexBytes(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(s, 2 * i, 2 * i + 2, 16);
        }
        return b;
    }
}
