// Battle snapshots: traveller_env/rules/snapshot.py's format, field for field (its docstring
// documents it); the refusal messages are its words.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "traveller/battle.hpp"

namespace traveller {

namespace {

constexpr char kSnapMagic[4] = {'T', 'B', 'S', 'N'};
constexpr std::uint8_t kSnapVersion = 1;

std::uint32_t crc32(const std::string& bytes, std::size_t n) noexcept {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= static_cast<std::uint8_t>(bytes[i]);
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

std::uint64_t fnv1a(const std::string& text) noexcept {
    std::uint64_t h = 0xCBF29CE484222325ULL;
    for (unsigned char b : text) h = (h ^ b) * 0x100000001B3ULL;
    return h;
}

struct Writer {
    std::string out;
    template <typename T>
    void put(T v) {
        unsigned char buf[sizeof(T)];
        std::memcpy(buf, &v, sizeof(T));  // little-endian hosts only (x86-64, arm64)
        out.append(reinterpret_cast<const char*>(buf), sizeof(T));
    }
    void u8(int v) { put(static_cast<std::uint8_t>(v)); }
    void i8(int v) { put(static_cast<std::int8_t>(v)); }
    void i16(int v) { put(static_cast<std::int16_t>(v)); }
    void u16(std::size_t v) { put(static_cast<std::uint16_t>(v)); }
    void i32(int v) { put(static_cast<std::int32_t>(v)); }
};

[[noreturn]] void snap_error(const std::string& msg) {
    throw std::invalid_argument("battle snapshot: " + msg);
}

void snap_check(bool ok, const std::string& msg) {
    if (!ok) snap_error(msg);
}

struct Reader {
    const std::string& data;
    std::size_t pos = 0;
    template <typename T>
    T get(const char* what) {
        if (pos + sizeof(T) > data.size()) {
            snap_error("truncated: " + std::to_string(data.size()) + " bytes end inside " + what);
        }
        T v;
        std::memcpy(&v, data.data() + pos, sizeof(T));
        pos += sizeof(T);
        return v;
    }
    int u8(const char* what) { return get<std::uint8_t>(what); }
    int i8(const char* what) { return get<std::int8_t>(what); }
    int i16(const char* what) { return get<std::int16_t>(what); }
    int u16(const char* what) { return get<std::uint16_t>(what); }
    int i32(const char* what) { return get<std::int32_t>(what); }
};

int snap_index(int v, int n, const std::string& what, bool none = true) {
    const int lo = none ? -1 : 0;
    snap_check(v >= lo && v < n, what + " must be a combatant index in [" + std::to_string(lo) +
                                     ", " + std::to_string(n - 1) + "], got " + std::to_string(v));
    return v;
}

std::string hex64(std::uint64_t v) {
    static const char* digits = "0123456789abcdef";
    std::string s = "0x";
    for (int shift = 60; shift >= 0; shift -= 4) s += digits[(v >> shift) & 0xF];
    return s;
}

bool is_bool(int v) { return v == 0 || v == 1; }

}  // namespace

std::uint64_t Battle::fingerprint() const {
    // snapshot.fingerprint_text: unit separators between the fields.
    std::string t;
    auto field = [&t](const std::string& s) {
        if (!t.empty()) t += '\x1f';
        t += s;
    };
    for (const auto& s : names_.ids) field(s);
    field("|");
    field(names_.sides[0]);
    field(names_.sides[1]);
    field("|");
    field(std::to_string(grid_->width()) + "x" + std::to_string(grid_->height()));
    field(std::to_string(max_move_));
    field("|");
    for (const auto& s : names_.weapons) field(s);
    field("|");
    for (const auto& s : names_.damage_dice) field(s);
    return fnv1a(t);
}

std::string Battle::snapshot() const {
    const int n = num_combatants();
    Writer w;
    w.out.append(kSnapMagic, 4);
    w.u8(kSnapVersion);
    w.put(fingerprint());
    w.u16(static_cast<std::size_t>(n));
    w.put(dice_.state);
    w.put(dice_.inc);
    w.i32(round_);
    w.u8(static_cast<int>(phase_));
    w.u8(done_);
    w.u8(truncated_);
    w.i8(winner_);
    w.i16(turn_actor_);
    w.i16(decider());
    w.u16(haste_queue_.size() - haste_head_);
    for (std::size_t i = haste_head_; i < haste_queue_.size(); ++i) w.i16(haste_queue_[i]);
    w.u16(group_.size());
    for (int c : group_) w.i16(c);
    w.u16(group_queue_.size() - group_head_);
    for (std::size_t i = group_head_; i < group_queue_.size(); ++i) w.i16(group_queue_[i]);
    w.u16(pools_.all().size());
    for (const auto& p : pools_.all()) {
        w.i16(p.leader);
        w.u8(p.kind);
        w.i32(p.count);
    }
    w.u8(pending_.active);
    if (pending_.active) {
        w.i16(pending_.attacker);
        w.i16(pending_.target);
        w.u8(pending_.melee);
        w.put(pending_.range_m);
        w.u8(pending_.dms.n);
        for (int i = 0; i < pending_.dms.n; ++i) {
            w.u8(static_cast<int>(pending_.dms.name[i]));
            w.i32(pending_.dms.value[i]);
        }
    }
    for (int v : summary_.damage_dealt) w.i32(v);
    for (int v : summary_.damage_taken) w.i32(v);
    w.i32(summary_.dropouts);
    for (const auto& c : cs_) {
        for (int k = 0; k < kNumChars; ++k) w.i32(c.chars[k]);
        w.i32(c.x);
        w.i32(c.y);
        w.u8(c.stance);
        w.u8(c.drawn);
        w.i32(c.ammo);
        w.i32(c.spares);
        w.i32(c.initiative);
        w.i32(c.init_mod_now);
        w.i32(c.init_mod_next);
        w.u8(c.hasty);
        w.u8(c.turn_begun);
        w.i32(c.minors);
        w.u8(c.significant);
        w.i16(c.aim_target);
        w.i32(c.aim_dm);
        w.u8(c.ready_kind);
        w.i32(c.ready_count);
        w.u8(c.bonus);
        w.u8(c.penalty);
        w.u8(c.down);
        w.u8(c.dead);
        w.u8(c.out);
    }
    w.put(static_cast<std::uint32_t>(events_.size()));
    w.put(crc32(w.out, w.out.size()));
    return w.out;
}

void Battle::restore(const std::string& data) {
    const int n = num_combatants();
    snap_check(data.size() >= 4 && std::equal(kSnapMagic, kSnapMagic + 4, data.begin()),
               "not a battle snapshot (magic does not read b'TBSN')");
    Reader r{data};
    r.pos = 4;
    const int version = r.u8("the version");
    snap_check(version == kSnapVersion, "format version " + std::to_string(version) +
                                            "; this engine reads version " +
                                            std::to_string(kSnapVersion));
    bool crc_ok = data.size() >= 13;
    if (crc_ok) {
        std::uint32_t stored;
        std::memcpy(&stored, data.data() + data.size() - 4, 4);
        crc_ok = crc32(data, data.size() - 4) == stored;
    }
    snap_check(crc_ok, "checksum mismatch: the bytes are corrupt or cut short");
    const auto fp = r.get<std::uint64_t>("the header");
    const int count = r.u16("the header");
    const auto mine = fingerprint();
    snap_check(fp == mine, "taken from another scenario (fingerprint " + hex64(fp) +
                               ", this battle's is " + hex64(mine) + ")");
    snap_check(count == n, "holds " + std::to_string(count) + " combatants, this battle has " +
                               std::to_string(n));
    // Decode everything into a copy first: a refused snapshot leaves this battle unchanged.
    Battle s(*this);
    const char* bf = "the battle's fields";
    s.dice_.state = r.get<std::uint64_t>(bf);
    s.dice_.inc = r.get<std::uint64_t>(bf);
    s.round_ = r.i32(bf);
    const int phase = r.u8(bf), done = r.u8(bf), truncated = r.u8(bf);
    s.winner_ = r.i8(bf);
    s.turn_actor_ = r.i16(bf);
    s.decider_ = r.i16(bf);
    snap_check((s.dice_.inc & 1u) == 1u, "dice increment must be odd, got " +
                                             std::to_string(s.dice_.inc));
    snap_check(phase >= 0 && phase <= 4, "phase must be in [0, 4], got " + std::to_string(phase));
    snap_check(is_bool(done) && is_bool(truncated), "done and truncated must be 0 or 1");
    snap_check(s.winner_ >= -1 && s.winner_ <= 1,
               "winner must be -1, 0 or 1, got " + std::to_string(s.winner_));
    snap_check(s.round_ >= 0, "round must be >= 0, got " + std::to_string(s.round_));
    snap_index(s.turn_actor_, n, "turn_actor");
    snap_index(s.decider_, n, "decider");
    s.phase_ = static_cast<Phase>(phase);
    s.done_ = done;
    s.truncated_ = truncated;
    std::vector<int>* queues[3] = {&s.haste_queue_, &s.group_, &s.group_queue_};
    const char* qnames[3] = {"haste_queue", "group", "group_queue"};
    for (int q = 0; q < 3; ++q) {
        const int len = r.u16(qnames[q]);
        snap_check(len <= n, std::string(qnames[q]) + " holds " + std::to_string(len) +
                                 " entries, more than the " + std::to_string(n) + " combatants");
        queues[q]->clear();
        for (int i = 0; i < len; ++i) {
            queues[q]->push_back(snap_index(r.i16(qnames[q]), n, std::string(qnames[q]) + "[" +
                                                                      std::to_string(i) + "]",
                                            false));
        }
    }
    s.haste_head_ = 0;
    s.group_head_ = 0;
    const int n_pools = r.u16("pools");
    snap_check(n_pools <= 2 * n, "pools holds " + std::to_string(n_pools) +
                                     " entries, more than 2 per combatant");
    s.pools_.clear();
    for (int i = 0; i < n_pools; ++i) {
        const std::string what = "pools[" + std::to_string(i) + "]";
        const int leader = snap_index(r.i16(what.c_str()), n, what + ".leader", false);
        const int kind = r.u8(what.c_str());
        const int cnt = r.i32(what.c_str());
        snap_check(kind == 0 || kind == 1, what + ".kind must be 0 (bonus) or 1 (penalty), got " +
                                               std::to_string(kind));
        snap_check(cnt > 0, what + ".count must be positive, got " + std::to_string(cnt));
        s.pools_.add(leader, s.cs_[static_cast<std::size_t>(leader)].side, kind, cnt);
    }
    const int active = r.u8("pending");
    snap_check(is_bool(active), "pending.active must be 0 or 1, got " + std::to_string(active));
    s.pending_ = PendingAttack{};
    if (active) {
        s.pending_.active = true;
        s.pending_.attacker = snap_index(r.i16("pending"), n, "pending.attacker", false);
        s.pending_.target = snap_index(r.i16("pending"), n, "pending.target", false);
        s.pending_.melee = r.u8("pending") != 0;
        s.pending_.range_m = r.get<double>("pending");
        const int n_dms = r.u8("pending");
        snap_check(n_dms <= 16, "pending holds " + std::to_string(n_dms) + " DMs, at most 16");
        for (int i = 0; i < n_dms; ++i) {
            const std::string what = "pending.dms[" + std::to_string(i) + "]";
            const int name = r.u8(what.c_str());
            const int value = r.i32(what.c_str());
            snap_check(name < 16, what + " names DM " + std::to_string(name) + ", there are 16");
            snap_check(s.pending_.dms.n < Dms::kMax, what + ": more DMs than the core holds");
            s.pending_.dms.set(static_cast<DmName>(name), value);
        }
    }
    for (auto& v : s.summary_.damage_dealt) v = r.i32("summary");
    for (auto& v : s.summary_.damage_taken) v = r.i32("summary");
    s.summary_.dropouts = r.i32("summary");
    for (int i = 0; i < n; ++i) {
        const std::string what = "combatants[" + std::to_string(i) + "]";
        const char* w = what.c_str();
        auto& c = s.cs_[static_cast<std::size_t>(i)];
        for (int k = 0; k < kNumChars; ++k) c.chars[k] = r.i32(w);
        c.x = r.i32(w);
        c.y = r.i32(w);
        c.stance = r.u8(w);
        c.drawn = r.u8(w) != 0;
        c.ammo = r.i32(w);
        c.spares = r.i32(w);
        c.initiative = r.i32(w);
        c.init_mod_now = r.i32(w);
        c.init_mod_next = r.i32(w);
        c.hasty = r.u8(w) != 0;
        c.turn_begun = r.u8(w) != 0;
        c.minors = r.i32(w);
        c.significant = r.u8(w) != 0;
        c.aim_target = r.i16(w);
        c.aim_dm = r.i32(w);
        c.ready_kind = r.u8(w);
        c.ready_count = r.i32(w);
        c.bonus = r.u8(w) != 0;
        c.penalty = r.u8(w) != 0;
        c.down = r.u8(w) != 0;
        c.dead = r.u8(w) != 0;
        c.out = r.u8(w) != 0;
        snap_check(c.stance <= 2, what + ".stance must be 0, 1 or 2, got " +
                                      std::to_string(c.stance));
        snap_check(c.ready_kind <= 2, what + ".ready_kind must be 0, 1 or 2, got " +
                                          std::to_string(c.ready_kind));
        snap_index(c.aim_target, n, what + ".aim_target");
    }
    r.get<std::uint32_t>("events_before");
    r.get<std::uint32_t>("the checksum");
    snap_check(r.pos == data.size(), std::to_string(data.size() - r.pos) +
                                         " trailing bytes after the checksum");
    s.events_.clear();
    s.ints_.clear();
    s.strings_.clear();
    *this = std::move(s);
}

}  // namespace traveller
