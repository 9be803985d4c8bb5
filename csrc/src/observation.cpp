// The observation vector and the global state: traveller_env/observations.py, entry for entry
// (see observation.hpp). Each entry is computed in double exactly as the Python expression
// named beside it and cast to float once.
#include "traveller/observation.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace traveller {

namespace {

// observations._unit: clamp to [-1, 1].
constexpr double unit(double x) noexcept { return x < -1.0 ? -1.0 : x > 1.0 ? 1.0 : x; }

inline float f32(double x) noexcept { return static_cast<float>(x); }
inline float flag(bool x) noexcept { return x ? 1.0f : 0.0f; }

// Position of each R5.1 band among the slot's five band flags (observations._BAND_INDEX).
constexpr int band_index(int dm) noexcept {
    switch (dm) {
        case 1: return 0;
        case 0: return 1;
        case -2: return 2;
        case -4: return 3;
        default: return 4;  // kNoBand: beyond 4x Range
    }
}

// The enemies of `me` in play (the move and attack views' denominators).
int enemies_in_play(const Battle& b, const Combatant& me) noexcept {
    int n = 0;
    for (int i = 0; i < b.num_combatants(); ++i) {
        const Combatant& c = b.combatant(i);
        if (c.side != me.side && !c.out) ++n;
    }
    return n;
}

// observations.move_view_squares: square k is the observer's own (k = 0), then direction
// (k - 1) / per_dir, (k - 1) % per_dir + 1 squares on (per_dir: the view's squares per
// direction). False off the map or on a wall (GridMap.passable), where both views write zeros.
bool view_square(const Battle& b, const Combatant& me, int per_dir, int k, int& x,
                 int& y) noexcept {
    x = me.x;
    y = me.y;
    if (k > 0) {
        const int dir = (k - 1) / per_dir, steps = (k - 1) % per_dir + 1;
        x += kDirDx[dir] * steps;
        y += kDirDy[dir] * steps;
    }
    return b.grid().in_bounds(x, y) && !b.grid().is_wall(x, y);
}

}  // namespace

// ------------------------------------------------------------------------ the layout
std::string ObsLayout::malformed() const {
    struct Field {
        const char* name;
        int value, low, high;
    };
    const Field fields[] = {{"allies", allies, 0, 64},
                            {"enemies", enemies, 1, 64},
                            {"map_size", map_size, 1, 1000},
                            {"max_move_squares", max_move_squares, 1, 64}};
    for (const Field& f : fields) {
        if (f.value < f.low || f.value > f.high) {
            return std::string("layout: ") + f.name + " must be an int in [" +
                   std::to_string(f.low) + ", " + std::to_string(f.high) + "], got " +
                   std::to_string(f.value);
        }
    }
    return {};
}

std::string ObsLayout::problems(const Battle& b) const {
    std::string out;
    auto add = [&out](const std::string& problem) {
        if (!out.empty()) out += "; ";
        out += problem;
    };
    int per_side[2] = {0, 0};
    for (int i = 0; i < b.num_combatants(); ++i) ++per_side[b.combatant(i).side];
    for (int s = 0; s < 2; ++s) {
        if (per_side[s] > side_limit()) {
            add("side " + std::to_string(s) + " has " + std::to_string(per_side[s]) +
                " combatants; the layout's limit is " + std::to_string(side_limit()) +
                " a side (" + std::to_string(allies) + " ally and " + std::to_string(enemies) +
                " enemy slots)");
        }
    }
    const int w = b.grid().width(), h = b.grid().height();
    if (w > map_size || h > map_size) {
        add("its map is " + std::to_string(w) + "x" + std::to_string(h) +
            " squares; the layout's limit is " + std::to_string(map_size) + "x" +
            std::to_string(map_size) + " (map_size)");
    }
    if (b.max_move_squares() > max_move_squares) {
        add("a combatant moves " + std::to_string(b.max_move_squares()) +
            " squares; the layout's limit is " + std::to_string(max_move_squares) +
            " (max_move_squares)");
    }
    return out;
}

// ------------------------------------------------------------------------ the observer
void Observer::set_size() noexcept {
    size_ = kSelfFields + n_slots_ * kSlotFields;
    if (move_view_) size_ += kMoveViewFields * (1 + kNumDirs * view_squares_);
    if (aim_view_) size_ += kAimViewFields * n_slots_;
    if (attack_view_) {
        size_ += kAttackViewFields * n_slots_
                 + kAttackSquareFields * (1 + kNumDirs * view_squares_);
    }
}

Observer Observer::with_views(bool move_view, bool aim_view, bool attack_view) const {
    Observer twin(*this);
    twin.move_view_ = move_view;
    twin.aim_view_ = aim_view;
    twin.attack_view_ = attack_view;
    twin.set_size();
    return twin;
}

Observer::Observer(const Battle& b, bool move_view, bool aim_view, bool attack_view,
                   const std::optional<ObsLayout>& layout)
    : move_view_(move_view), aim_view_(aim_view), attack_view_(attack_view), layout_(layout) {
    n_ = b.num_combatants();
    int per_side[2] = {0, 0};
    for (int i = 0; i < n_; ++i) ++per_side[b.combatant(i).side];
    int n_enemy_slots = 0;
    if (layout_) {
        std::string why = layout_->malformed();
        if (why.empty()) {
            why = layout_->problems(b);
            if (!why.empty()) why = "the scenario does not fit the layout: " + why;
        }
        if (!why.empty()) throw std::invalid_argument(why);
        n_ally_slots_ = layout_->allies;
        n_enemy_slots = layout_->enemies;
        view_squares_ = layout_->max_move_squares;
        map_size_ = layout_->map_size;
        for (int s = 0; s < 2; ++s) {  // ObservationBuilder._state_seats
            for (int i = 0; i < n_; ++i) {
                if (b.combatant(i).side == s) state_seats_.push_back(i);
            }
            state_seats_.insert(state_seats_.end(),
                                static_cast<std::size_t>(layout_->side_limit() - per_side[s]), -1);
        }
    } else {
        const int biggest = std::max(per_side[0], per_side[1]);
        n_ally_slots_ = biggest - 1;
        n_enemy_slots = biggest;
        view_squares_ = b.max_move_squares();
        for (int i = 0; i < n_; ++i) state_seats_.push_back(i);
    }
    n_slots_ = n_ally_slots_ + n_enemy_slots;
    set_size();
    state_size_ = static_cast<int>(state_seats_.size()) * kStateFields + 4;
    slots_.assign(static_cast<std::size_t>(n_ * n_slots_), -1);
    for (int seat = 0; seat < n_; ++seat) {
        const int side = b.combatant(seat).side;
        int* row = slots_.data() + seat * n_slots_;
        int ally = 0, enemy = n_ally_slots_;
        for (int i = 0; i < n_; ++i) {
            if (b.combatant(i).side == side) {
                if (i != seat) row[ally++] = i;
            } else {
                row[enemy++] = i;
            }
        }
    }
    fixed_.resize(static_cast<std::size_t>(n_));
    for (int i = 0; i < n_; ++i) {
        const Combatant& c = b.combatant(i);
        Fixed& f = fixed_[static_cast<std::size_t>(i)];
        for (int ch = 0; ch < 3; ++ch) f.max_chars[ch] = static_cast<double>(c.chars[ch]);
        f.init_spares = static_cast<double>(std::max(1, c.spares));
        f.skill_dm = unit(static_cast<double>(skill_dm(c.skills.weapon)) / 6.0);
        Combatant calm = c;  // leadership_dms(c, hasty=False): no haste DM
        calm.hasty = false;
        f.leadership_dm = unit(static_cast<double>(leadership_dms(calm).total()) / 10.0);
    }
}

void Observer::observe(const Battle& b, int seat, float* out) const noexcept {
    const Combatant& me = b.combatant(seat);
    const Fixed& mine = fixed_[static_cast<std::size_t>(seat)];
    const Grid& g = b.grid();
    const double W = map_size_ ? map_size_ : g.width(), H = map_size_ ? map_size_ : g.height();
    const Weapon& w = me.weapon;
    const bool ranged = !w.melee;
    const Phase phase = b.phase();

    double sig_avail = 0.0, minors_avail = 0.0;
    if (phase == Phase::turn && b.decider() == seat) {
        const Budget budget{me.minors, me.significant};
        sig_avail = budget.significant_left() ? 1.0 : 0.0;
        minors_avail = budget.minors_left() / 3.0;
    }
    int bonuses = 0, penalties = 0;
    if (!b.pools().empty()) b.pools().held(seat, me.side, bonuses, penalties);
    double ready = 0.0;
    if (me.ready_kind != kReadyNone) {
        const int needed = me.ready_kind == kReadyDraw ? w.draw_actions : w.reload_actions;
        ready = static_cast<double>(me.ready_count) / needed;
    }
    const PendingAttack& pending = b.pending();
    const int attacker = pending.active && pending.target == seat ? pending.attacker : -1;

    float* o = out;
    *o++ = f32(me.x / W);
    *o++ = f32(me.y / H);
    for (int ch = 0; ch < 3; ++ch) *o++ = f32(1.0 - me.chars[ch] / mine.max_chars[ch]);
    *o++ = flag(me.stance == kStand);
    *o++ = flag(me.stance == kCrouch);
    *o++ = flag(me.stance == kProne);
    *o++ = flag(me.drawn);
    *o++ = flag(w.melee);
    *o++ = ranged ? f32(static_cast<double>(me.ammo) / w.magazine) : 0.0f;
    *o++ = ranged ? f32(me.spares / mine.init_spares) : 0.0f;
    *o++ = f32(me.aim_dm / 6.0);
    *o++ = f32(me.minors / 3.0);
    *o++ = flag(me.significant);
    *o++ = f32(sig_avail);
    *o++ = f32(minors_avail);
    *o++ = flag(me.hasty);
    *o++ = flag(me.bonus);
    *o++ = flag(me.penalty);
    *o++ = f32(unit(bonuses / kPoolScale));
    *o++ = f32(unit(penalties / kPoolScale));
    *o++ = f32(unit(me.current_initiative() / kInitScale));
    *o++ = f32(ready);
    *o++ = f32(static_cast<double>(b.round()) / b.options().max_rounds);
    *o++ = flag(phase == Phase::haste);
    *o++ = flag(phase == Phase::turn);
    *o++ = flag(phase == Phase::reaction);
    *o++ = flag(attacker >= 0 && pending.melee);
    *o++ = f32(mine.skill_dm);
    *o++ = f32(mine.leadership_dm);

    const int* row = slots_.data() + seat * n_slots_;
    const double four_range = 4 * w.range_m;
    for (int k = 0; k < n_slots_; ++k) {
        const int oid = row[k];
        if (oid < 0) {
            std::fill(o, o + kSlotFields, 0.0f);
            o += kSlotFields;
            continue;
        }
        const Combatant& c = b.combatant(oid);
        if (c.out) {
            o[0] = 1.0f;
            std::fill(o + 1, o + kSlotFields, 0.0f);
            o += kSlotFields;
            continue;
        }
        // observations._offset_geometry
        const int dx = c.x - me.x, dy = c.y - me.y;
        const double dist = Grid::distance_m(0, 0, dx, dy);
        *o++ = 1.0f;
        *o++ = 1.0f;
        *o++ = f32(dx / W);
        *o++ = f32(dy / H);
        float* bands = o + 1;
        std::fill(bands, bands + 5, 0.0f);
        if (w.melee) {
            *o = f32(std::min(1.0, dist / 6.0));
        } else {
            *o = f32(std::min(1.0, dist / four_range));
            bands[band_index(range_dm(dist, w.range_m))] = 1.0f;
        }
        o += 6;
        *o++ = flag(std::max(std::abs(dx), std::abs(dy)) <= 1);
        *o++ = flag(g.line_of_sight(me.x, me.y, c.x, c.y));
        *o++ = flag(c.stance != kStand && g.cover_between(me.x, me.y, c.x, c.y));
        // observations._public_block around the observer's "aimed"
        const Fixed& theirs = fixed_[static_cast<std::size_t>(oid)];
        *o++ = flag(c.stance == kStand);
        *o++ = flag(c.stance == kCrouch);
        *o++ = flag(c.stance == kProne);
        for (int ch = 0; ch < 3; ++ch) *o++ = f32(1.0 - c.chars[ch] / theirs.max_chars[ch]);
        *o++ = flag(c.drawn);
        *o++ = flag(c.weapon.melee);
        *o++ = flag(me.aim_target == oid);
        *o++ = flag(c.bonus);
        *o++ = flag(c.penalty);
        *o++ = flag(c.turn_begun);
        *o++ = flag(c.hasty);
        *o++ = f32(unit(c.current_initiative() / kInitScale));
        *o++ = flag(attacker == oid);
    }
    if (move_view_) o = write_move_view(b, seat, o);
    if (aim_view_) o = write_aim_view(b, seat, o);
    if (attack_view_) write_attack_view(b, seat, o);
}

float* Observer::write_aim_view(const Battle& b, int seat, float* o) const noexcept {
    const int* row = slots_.data() + seat * n_slots_;
    for (int k = 0; k < n_slots_; ++k) {
        const int oid = row[k];
        const Combatant* c = oid < 0 ? nullptr : &b.combatant(oid);
        *o++ = c != nullptr && !c->out && c->aim_target == seat ? f32(c->aim_dm / 6.0) : 0.0f;
    }
    return o;
}

float* Observer::write_attack_view(const Battle& b, int seat, float* o) const noexcept {
    const Combatant& me = b.combatant(seat);
    const Grid& g = b.grid();
    const int* row = slots_.data() + seat * n_slots_;
    for (int k = 0; k < n_slots_; ++k) {
        const int oid = row[k];
        if (oid < 0 || b.combatant(oid).out) {
            *o++ = 0.0f;
            *o++ = 0.0f;
            continue;
        }
        const Combatant& c = b.combatant(oid);
        *o++ = f32(hit_probability(me, c, oid, g, me.x, me.y, c.x, c.y));
        *o++ = f32(hit_probability(c, me, seat, g, c.x, c.y, me.x, me.y));
    }
    // observations.attack_square_view
    const int squares = 1 + kNumDirs * view_squares_;
    const int n = enemies_in_play(b, me);
    if (n == 0) {
        std::fill(o, o + kAttackSquareFields * squares, 0.0f);
        return o + kAttackSquareFields * squares;
    }
    const double count = n;
    for (int k = 0; k < squares; ++k) {
        int x, y;
        if (!view_square(b, me, view_squares_, k, x, y)) {
            *o++ = 0.0f;
            *o++ = 0.0f;
            continue;
        }
        double best = 0.0, threat = 0.0;
        for (int i = 0; i < n_; ++i) {
            const Combatant& e = b.combatant(i);
            if (e.side == me.side || e.out) continue;
            best = std::max(best, hit_probability(me, e, i, g, x, y, e.x, e.y, 0));
            threat += hit_probability(e, me, seat, g, e.x, e.y, x, y);
        }
        *o++ = f32(best);
        *o++ = f32(threat / count);
    }
    return o;
}

float* Observer::write_move_view(const Battle& b, int seat, float* o) const noexcept {
    const Combatant& me = b.combatant(seat);
    const Grid& g = b.grid();
    const int squares = 1 + kNumDirs * view_squares_;
    const int n = enemies_in_play(b, me);
    if (n == 0) {
        std::fill(o, o + kMoveViewFields * squares, 0.0f);
        return o + kMoveViewFields * squares;
    }
    const double count = n;
    for (int k = 0; k < squares; ++k) {
        int x, y;
        if (!view_square(b, me, view_squares_, k, x, y)) {
            *o++ = 0.0f;
            *o++ = 0.0f;
            *o++ = 0.0f;
            continue;
        }
        int seen = 0, covered = 0, clear = 0;
        for (int i = 0; i < n_; ++i) {
            const Combatant& e = b.combatant(i);
            if (e.side == me.side || e.out) continue;
            if (g.line_of_sight(e.x, e.y, x, y)) {
                ++seen;
                if (g.cover_between(e.x, e.y, x, y)) ++covered;
                if (!(e.stance != kStand && g.cover_between(x, y, e.x, e.y))) ++clear;
            }
        }
        *o++ = f32(seen / count);
        *o++ = f32(covered / count);
        *o++ = f32(clear / count);
    }
    return o;
}

void Observer::state(const Battle& b, float* out) const noexcept {
    const double W = map_size_ ? map_size_ : b.grid().width();
    const double H = map_size_ ? map_size_ : b.grid().height();
    const int deciding = b.decider();
    const int blocks = static_cast<int>(state_seats_.size());
    // np.clip(out, -1, 1) after the float32 assignment: the same as clamping before the cast
    // (the cast is monotonic and -1, 1 are exact).
    for (int k = 0; k < blocks; ++k) {
        float* row = out + k * kStateFields;
        const int i = state_seats_[static_cast<std::size_t>(k)];
        if (i < 0) {  // a layout's empty block: zeros
            std::fill(row, row + kStateFields, 0.0f);
            continue;
        }
        const Combatant& c = b.combatant(i);
        const Fixed& f = fixed_[static_cast<std::size_t>(i)];
        row[0] = static_cast<float>(unit(c.side));
        row[1] = flag(!c.out);
        row[2] = f32(unit(c.x / W));
        row[3] = f32(unit(c.y / H));
        for (int ch = 0; ch < 3; ++ch) row[4 + ch] = f32(unit(1.0 - c.chars[ch] / f.max_chars[ch]));
        row[7] = flag(c.stance == kStand);
        row[8] = flag(c.stance == kCrouch);
        row[9] = flag(c.stance == kProne);
        row[10] = flag(c.drawn);
        row[11] = c.weapon.magazine ? f32(unit(static_cast<double>(c.ammo) / c.weapon.magazine)) : 0.0f;
        row[12] = f32(unit(c.aim_dm / 6.0));
        row[13] = f32(unit(c.current_initiative() / kInitScale));
        row[14] = flag(c.hasty);
        row[15] = flag(c.bonus);
        row[16] = flag(c.penalty);
        row[17] = flag(c.turn_begun);
        row[18] = flag(i == deciding);
    }
    float* tail = out + blocks * kStateFields;
    const Phase phase = b.phase();
    tail[0] = flag(phase == Phase::haste);
    tail[1] = flag(phase == Phase::turn);
    tail[2] = flag(phase == Phase::reaction);
    tail[3] = f32(unit(static_cast<double>(b.round()) / b.options().max_rounds));
}

}  // namespace traveller
