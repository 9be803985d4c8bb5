// Battle: construction, the catalogue, turn sequencing (sequencing.py) and the effects of
// actions (battle.py). The kinds' legality and dispatch are in kinds.cpp.
#include "traveller/battle.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

namespace traveller {

namespace {

constexpr int kAmbushInitiative = 12;

}  // namespace

Battle::Battle(std::shared_ptr<const Grid> grid, std::vector<Combatant> combatants, Names names,
               RulesOptions options, std::uint64_t seed, bool record_events)
    : grid_(std::move(grid)),
      cs_(std::move(combatants)),
      names_(std::move(names)),
      options_(options),
      dice_(rng::Pcg32::from_seed(seed)),
      record_(record_events) {
    const int n = num_combatants();
    haste_queue_.reserve(static_cast<std::size_t>(n));
    group_.reserve(static_cast<std::size_t>(n));
    group_queue_.reserve(static_cast<std::size_t>(n));
    pools_.reserve(static_cast<std::size_t>(n));
    summary_.damage_dealt.assign(static_cast<std::size_t>(n), 0);
    summary_.damage_taken.assign(static_cast<std::size_t>(n), 0);
    if (record_) events_.reserve(256);
    max_move_ = 1;
    for (const auto& c : cs_) {
        const int k = static_cast<int>(py_floordiv(c.movement_m, kSquareM));
        max_move_ = std::max(max_move_, k);
    }
    off_move_ = 1;
    off_stance_ = off_move_ + kNumDirs * max_move_;
    off_draw_ = off_stance_ + 3;
    off_reload_ = off_draw_ + 1;
    off_aim_ = off_reload_ + 1;
    off_attack_ = off_aim_ + n;
    off_leadership_ = off_attack_ + n;
    off_direct_ = off_leadership_ + 1;
    off_hamper_ = off_direct_ + n;
    off_react_ = off_hamper_ + n;
    off_haste_ = off_react_ + 3;
    n_actions_ = off_haste_ + 2;
    roll_initiative();
    start_round();
}

Battle Battle::simulation(std::uint64_t seed, bool record_events) const {
    Battle twin(*this);
    twin.dice_ = rng::Pcg32::from_seed(seed);
    if (!record_events) {
        twin.record_ = false;
        twin.events_.clear();
        twin.ints_.clear();
        twin.strings_.clear();
    }
    return twin;
}

void Battle::restart(const std::vector<Combatant>& initial, std::uint64_t seed) {
    if (initial.size() != cs_.size()) throw std::invalid_argument("Battle::restart: wrong size");
    cs_ = initial;  // the same size: copied in place
    dice_ = rng::Pcg32::from_seed(seed);
    events_.clear();
    ints_.clear();
    strings_.clear();
    round_ = 0;
    phase_ = Phase::start;
    done_ = truncated_ = false;
    winner_ = turn_actor_ = decider_ = -1;
    haste_queue_.clear();
    haste_head_ = 0;
    group_.clear();
    group_queue_.clear();
    group_head_ = 0;
    pools_.clear();
    pending_ = PendingAttack{};
    std::fill(summary_.damage_dealt.begin(), summary_.damage_dealt.end(), 0);
    std::fill(summary_.damage_taken.begin(), summary_.damage_taken.end(), 0);
    summary_.dropouts = 0;
    roll_initiative();
    start_round();
}

std::size_t Battle::memory_bytes() const noexcept {
    auto strings = [](const std::vector<std::string>& v) {
        std::size_t n = v.capacity() * sizeof(std::string);
        for (const auto& x : v) n += x.capacity() > 15 ? x.capacity() + 1 : 0;  // beyond SSO
        return n;
    };
    return sizeof(*this) + cs_.capacity() * sizeof(Combatant) + events_.capacity() * sizeof(Event) +
           ints_.capacity() * sizeof(std::int32_t) + strings(strings_) +
           (haste_queue_.capacity() + group_.capacity() + group_queue_.capacity()) * sizeof(int) +
           pools_.capacity_bytes() +
           (summary_.damage_dealt.capacity() + summary_.damage_taken.capacity()) * sizeof(int) +
           strings(names_.ids) + strings(names_.weapons) + strings(names_.damage_dice);
}

// ------------------------------------------------------------------------ the catalogue
Action Battle::decode(int index) const noexcept {
    Action a;
    if (index < off_move_) {
        a.kind = Kind::end_turn;
    } else if (index < off_stance_) {
        a.kind = Kind::move;
        a.dir = (index - off_move_) / max_move_;
        a.squares = (index - off_move_) % max_move_ + 1;
    } else if (index < off_draw_) {
        a.kind = Kind::stance;
        a.arg = index - off_stance_;
    } else if (index < off_reload_) {
        a.kind = Kind::draw;
    } else if (index < off_aim_) {
        a.kind = Kind::reload;
    } else if (index < off_attack_) {
        a.kind = Kind::aim;
        a.arg = index - off_aim_;
    } else if (index < off_leadership_) {
        a.kind = Kind::attack;
        a.arg = index - off_attack_;
    } else if (index < off_direct_) {
        a.kind = Kind::leadership;
    } else if (index < off_hamper_) {
        a.kind = Kind::direct;
        a.arg = index - off_direct_;
    } else if (index < off_react_) {
        a.kind = Kind::hamper;
        a.arg = index - off_hamper_;
    } else if (index < off_haste_) {
        a.kind = Kind::react;
        a.arg = index - off_react_;
    } else {
        a.kind = Kind::haste;
        a.arg = index - off_haste_;
    }
    return a;
}

int Battle::encode(const Action& a) const noexcept {
    switch (a.kind) {
        case Kind::end_turn: return 0;
        case Kind::move: return off_move_ + a.dir * max_move_ + a.squares - 1;
        case Kind::stance: return off_stance_ + a.arg;
        case Kind::draw: return off_draw_;
        case Kind::reload: return off_reload_;
        case Kind::aim: return off_aim_ + a.arg;
        case Kind::attack: return off_attack_ + a.arg;
        case Kind::leadership: return off_leadership_;
        case Kind::direct: return off_direct_ + a.arg;
        case Kind::hamper: return off_hamper_ + a.arg;
        case Kind::react: return off_react_ + a.arg;
        case Kind::haste: return off_haste_ + a.arg;
    }
    return 0;
}

std::string Battle::label(int index) const {
    const Action a = decode(index);
    const std::string kind = kKindNames[static_cast<int>(a.kind)];
    switch (a.kind) {
        case Kind::move:
            return kind + ":" + kDirNames[a.dir] + ":" + std::to_string(a.squares);
        case Kind::stance: return kind + ":" + kStanceNames[a.arg];
        case Kind::react: return kind + ":" + kReactionNames[a.arg];
        case Kind::haste: return kind + (a.arg == 0 ? ":yes" : ":no");
        case Kind::aim:
        case Kind::attack:
        case Kind::direct:
        case Kind::hamper: return kind + ":" + names_.ids[static_cast<std::size_t>(a.arg)];
        default: return kind;
    }
}

namespace {

const char* budget_refusal(Cost cost, const Budget& b) {
    if (cost == Cost::significant && !b.significant_left()) {
        return "no Significant action left this turn (R2.1: one Significant after at most "
               "one Minor)";
    }
    if (cost == Cost::minor && b.minors_left() <= 0) return "no Minor action left this turn (R2.1)";
    return nullptr;
}

}  // namespace

void Battle::legal_mask(std::uint8_t* out) const {
    std::fill(out, out + n_actions_, std::uint8_t{0});
    if (done_) return;
    const Combatant& actor = cs_[static_cast<std::size_t>(decider_)];
    const Budget budget{actor.minors, actor.significant};
    for (int k = 0; k < kNumKinds; ++k) {
        const KindInfo& info = kKindInfo[k];
        if (info.phase != phase_ || budget_refusal(info.cost, budget) != nullptr) continue;
        kind_legal_mask(static_cast<Kind>(k), decider_, out);
    }
}

std::string Battle::why_illegal(int index) const {
    if (done_) return "the battle is over";
    const Action a = decode(index);
    const KindInfo& info = kKindInfo[static_cast<int>(a.kind)];
    if (info.phase != phase_) {
        if (phase_ == Phase::haste) {
            return "only haste:yes or haste:no can be chosen during haste declarations (R3.5)";
        }
        if (phase_ == Phase::reaction) {
            return "an attack awaits this combatant's reaction: react:none|dodge|parry (R3.6)";
        }
        return std::string(kKindNames[static_cast<int>(a.kind)]) + " is not possible during a turn";
    }
    const Combatant& actor = cs_[static_cast<std::size_t>(decider_)];
    const char* refusal = budget_refusal(info.cost, Budget{actor.minors, actor.significant});
    if (refusal != nullptr) return refusal;
    return kind_why_not(a, decider_);
}

void Battle::apply(int index) {
    const Action a = decode(index);
    const int actor = decider_;
    Combatant& c = cs_[static_cast<std::size_t>(actor)];
    const KindInfo& info = kKindInfo[static_cast<int>(a.kind)];
    if (info.cost == Cost::minor || info.cost == Cost::significant) {
        if (info.cost == Cost::minor) {
            c.minors += 1;
        } else {
            c.significant = true;
        }
        // R4.3 / R4.5: anything else breaks aim and draw/reload progress.
        const bool keeps_aim = a.kind == Kind::aim || (a.kind == Kind::attack && a.arg == c.aim_target);
        if (!keeps_aim) break_aim(actor);
        if (!info.keeps_ready) {
            c.ready_kind = kReadyNone;
            c.ready_count = 0;
        }
    }
    kind_apply(a, actor);
    if ((info.cost == Cost::minor || info.cost == Cost::significant || info.cost == Cost::free) &&
        phase_ == Phase::turn) {
        maybe_auto_end(actor);
    }
}

void Battle::forfeit(const std::string& label, const std::string& reason) {
    if (done_) return;
    Event& e = emit(EventType::illegal_action);
    e.a = static_cast<std::int16_t>(decider_);
    if (record_) {
        e.v[0] = static_cast<std::int32_t>(strings_.size());
        strings_.push_back(label);
        strings_.push_back(reason);
    }
    if (phase_ == Phase::haste) {
        declare_haste(decider_, false);
    } else if (phase_ == Phase::reaction) {
        react(decider_, kReactNone);
    } else {
        end_turn(kIllegalAction);
    }
}

Event& Battle::emit(EventType t) {
    if (!record_) {
        scratch_ = Event{};
        scratch_.type = t;
        return scratch_;
    }
    events_.emplace_back();
    events_.back().type = t;
    return events_.back();
}

// ------------------------------------------------------------------------ sequencing
bool Battle::order_key_less(const Combatant& a, const Combatant& b) const noexcept {
    if (a.current_initiative() != b.current_initiative()) {
        return a.current_initiative() < b.current_initiative();
    }
    return a.chars[kDEX] < b.chars[kDEX];
}

void Battle::roll_initiative() {
    bool any = false, all = true;
    for (const auto& c : cs_) {
        any = any || c.prepared;
        all = all && c.prepared;
    }
    const bool ambush = any && !all;
    for (int i = 0; i < num_combatants(); ++i) {
        Combatant& c = cs_[static_cast<std::size_t>(i)];
        const int dex = c.dm(kDEX);
        int base = 0;
        int roll[2] = {0, 0};
        const bool automatic = ambush && c.prepared;
        if (automatic) {
            base = kAmbushInitiative;
        } else {
            roll[0] = dice_.d6();
            roll[1] = dice_.d6();
            base = roll[0] + roll[1];
        }
        c.initiative = base + dex;
        Event& e = emit(EventType::initiative);
        e.a = static_cast<std::int16_t>(i);
        e.has_roll = !automatic;
        e.roll[0] = static_cast<std::int8_t>(roll[0]);
        e.roll[1] = static_cast<std::int8_t>(roll[1]);
        e.dms.set(DmName::DEX, dex);
        e.v[0] = c.initiative;
        e.v[1] = automatic;
    }
    for (int side = 0; side < 2; ++side) {
        int best = -1;
        for (int i = 0; i < num_combatants(); ++i) {
            const Combatant& c = cs_[static_cast<std::size_t>(i)];
            if (c.side != side || !c.skills.has_tactics) continue;
            if (best < 0) {
                best = i;
                continue;
            }
            const Combatant& b = cs_[static_cast<std::size_t>(best)];
            // key (level, INT, -order): a later combatant wins only when strictly greater.
            if (c.skills.tactics > b.skills.tactics ||
                (c.skills.tactics == b.skills.tactics && c.chars[kINT] > b.chars[kINT])) {
                best = i;
            }
        }
        if (best < 0) continue;
        const Combatant& leader = cs_[static_cast<std::size_t>(best)];
        Dms dms;
        dms.set(DmName::skill, leader.skills.tactics == kNoSkill ? 0 : leader.skills.tactics);
        dms.set(DmName::INT, leader.dm(kINT));
        const CheckResult r = roll_check(dice_, dms);
        for (auto& c : cs_) {
            if (c.side == side) c.initiative += r.effect;
        }
        Event& e = emit(EventType::tactics);
        e.a = static_cast<std::int16_t>(best);
        e.v[0] = side;
        e.has_roll = true;
        e.roll[0] = static_cast<std::int8_t>(r.roll[0]);
        e.roll[1] = static_cast<std::int8_t>(r.roll[1]);
        e.dms = dms;
        e.v[1] = r.total;
        e.v[2] = r.effect;
    }
}

void Battle::start_round() {
    if (round_ >= options_.max_rounds) {
        finish(-1, kMaxRounds, true);
        return;
    }
    round_ += 1;
    emit(EventType::round).v[0] = round_;
    for (auto& c : cs_) {
        c.init_mod_now = c.init_mod_next;
        c.init_mod_next = 0;
        c.hasty = false;
        c.turn_begun = false;
    }
    if (options_.hastening) {
        haste_queue_.clear();
        haste_head_ = 0;
        for (int i = 0; i < num_combatants(); ++i) {
            if (!cs_[static_cast<std::size_t>(i)].out) haste_queue_.push_back(i);
        }
        std::sort(haste_queue_.begin(), haste_queue_.end(), [this](int a, int b) {
            const Combatant& x = cs_[static_cast<std::size_t>(a)];
            const Combatant& y = cs_[static_cast<std::size_t>(b)];
            if (x.current_initiative() != y.current_initiative()) {
                return x.current_initiative() > y.current_initiative();
            }
            if (x.chars[kDEX] != y.chars[kDEX]) return x.chars[kDEX] > y.chars[kDEX];
            return x.order < y.order;
        });
        phase_ = Phase::haste;
        decider_ = haste_queue_[0];
    } else {
        next_turn();
    }
}

void Battle::declare_haste(int ci, bool yes) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    c.hasty = yes;
    if (yes) c.init_mod_now += kHasteInitiative;
    Event& e = emit(EventType::haste);
    e.a = static_cast<std::int16_t>(ci);
    e.v[0] = yes;
    e.v[1] = c.current_initiative();
    haste_head_ += 1;
    if (haste_head_ < haste_queue_.size()) {
        decider_ = haste_queue_[haste_head_];
    } else {
        next_turn();
    }
}

void Battle::change_initiative(int ci, int delta, int reason) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    int applies = 0;
    if (c.turn_begun) {
        c.init_mod_next += delta;
        applies = 1;
    } else {
        c.init_mod_now += delta;
    }
    Event& e = emit(EventType::initiative_change);
    e.a = static_cast<std::int16_t>(ci);
    e.v[0] = delta;
    e.v[1] = reason;
    e.v[2] = applies;
    e.v[3] = c.current_initiative();
    e.v[4] = c.init_mod_next;
}

void Battle::next_turn() {
    if (group_head_ < group_queue_.size()) {
        begin_turn(group_queue_[group_head_++]);
        return;
    }
    finish_group();
    if (check_end()) return;
    int best = -1;
    for (int i = 0; i < num_combatants(); ++i) {
        const Combatant& c = cs_[static_cast<std::size_t>(i)];
        if (c.out || c.turn_begun) continue;
        if (best < 0 || order_key_less(cs_[static_cast<std::size_t>(best)], c)) best = i;
    }
    if (best < 0) {
        start_round();
        return;
    }
    const Combatant& top = cs_[static_cast<std::size_t>(best)];
    group_.clear();
    for (int i = 0; i < num_combatants(); ++i) {
        const Combatant& c = cs_[static_cast<std::size_t>(i)];
        if (c.out || c.turn_begun) continue;
        if (!order_key_less(c, top) && !order_key_less(top, c)) group_.push_back(i);
    }
    group_queue_.assign(group_.begin() + 1, group_.end());
    group_head_ = 0;
    if (group_.size() > 1) {
        Event& e = emit(EventType::simultaneous);
        if (record_) {
            e.pool_off = static_cast<std::uint32_t>(ints_.size());
            e.pool_n = static_cast<std::uint32_t>(group_.size());
            ints_.insert(ints_.end(), group_.begin(), group_.end());
        }
        e.v[0] = top.current_initiative();
        e.v[1] = top.chars[kDEX];
    }
    begin_turn(group_[0]);
}

void Battle::finish_group() {
    for (int ci : group_) {
        Combatant& c = cs_[static_cast<std::size_t>(ci)];
        if (c.down && !c.out) {
            c.out = true;
            emit(EventType::out).a = static_cast<std::int16_t>(ci);
            summary_.dropouts += 1;
            for (int p = pools_.next_of_leader(ci); p >= 0; p = pools_.next_of_leader(ci)) {
                lapse(p, kLeaderOut);
            }
        }
    }
    group_.clear();
}

void Battle::begin_turn(int ci) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    c.turn_begun = true;
    c.minors = 0;
    c.significant = false;
    phase_ = Phase::turn;
    decider_ = turn_actor_ = ci;
    for (int p = pools_.next_of_leader(ci); p >= 0; p = pools_.next_of_leader(ci)) {
        lapse(p, kLeaderNextTurn);  // R7.5
    }
    Event& e = emit(EventType::turn);
    e.a = static_cast<std::int16_t>(ci);
    e.v[0] = c.current_initiative();
    e.v[1] = round_;
}

void Battle::end_turn(int reason) {
    Event& e = emit(EventType::end_turn);
    e.a = static_cast<std::int16_t>(decider_);
    e.v[0] = reason;
    turn_actor_ = -1;
    next_turn();
}

bool Battle::check_end() {
    unsigned sides = 0;
    for (const auto& c : cs_) {
        if (!c.out) sides |= 1u << c.side;
    }
    if (sides == 3u) return false;
    const int winner = sides == 1u ? 0 : sides == 2u ? 1 : -1;
    finish(winner, winner >= 0 ? kVictory : kAllOut, false);
    return true;
}

void Battle::finish(int winner, int reason, bool truncated) {
    done_ = true;
    truncated_ = truncated;
    winner_ = winner;
    phase_ = Phase::over;
    decider_ = -1;
    Event& e = emit(EventType::end);
    e.v[0] = round_;
    e.v[1] = winner;
    e.v[2] = reason;
}

// ------------------------------------------------------------------------ effects
void Battle::maybe_auto_end(int actor) {
    if (done_ || phase_ != Phase::turn || decider_ != actor) return;
    const Combatant& c = cs_[static_cast<std::size_t>(actor)];
    if (!Budget{c.minors, c.significant}.spent()) return;
    if (free_action_possible(actor)) return;
    end_turn(kBudgetSpent);
}

void Battle::break_aim(int ci) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    if (c.aim_target >= 0) {
        Event& e = emit(EventType::aim_lost);
        e.a = static_cast<std::int16_t>(ci);
        e.b = static_cast<std::int16_t>(c.aim_target);
        c.aim_target = -1;
        c.aim_dm = 0;
    }
}

bool Battle::ready_step(int actor, int kind, int needed) {
    Combatant& c = cs_[static_cast<std::size_t>(actor)];
    if (c.ready_kind == kind) {
        c.ready_count += 1;
    } else {
        c.ready_kind = kind;
        c.ready_count = 1;
    }
    const bool finished = c.ready_count >= needed;
    Event& e = emit(kind == kReadyDraw ? EventType::draw : EventType::reload);
    e.a = static_cast<std::int16_t>(actor);
    e.v[0] = c.ready_count;
    e.v[1] = needed;
    e.v[2] = finished;
    if (finished) {
        c.ready_kind = kReadyNone;
        c.ready_count = 0;
    }
    return finished;
}

void Battle::apply_held(int ci, Dms& dms, int check) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    if (!c.bonus && !c.penalty) return;
    if (c.bonus) dms.set(DmName::leadership_bonus, 1);
    if (c.penalty) dms.set(DmName::leadership_penalty, -1);
    if (c.bonus) {
        c.bonus = false;
        Event& e = emit(EventType::bonus_used);
        e.a = static_cast<std::int16_t>(ci);
        e.v[0] = check;
    }
    if (c.penalty) {
        c.penalty = false;
        Event& e = emit(EventType::penalty_used);
        e.a = static_cast<std::int16_t>(ci);
        e.v[0] = check;
    }
}

void Battle::declare_attack(int actor, int target) {
    Combatant& a = cs_[static_cast<std::size_t>(actor)];
    const Combatant& t = cs_[static_cast<std::size_t>(target)];
    const Dms dms = attack_dms(a, t, target, *grid_);
    if (!a.weapon.melee) a.ammo -= 1;
    a.aim_target = -1;  // the aim is spent by this attack whatever its target (R4.3)
    a.aim_dm = 0;
    const int cost = recoil_cost(a.weapon.str_requirement, a.chars[kSTR]);
    if (cost) change_initiative(actor, -cost, kRecoil);  // R3.7
    pending_.active = true;
    pending_.attacker = actor;
    pending_.target = target;
    pending_.melee = a.weapon.melee;
    pending_.dms = dms;
    pending_.range_m = Grid::distance_m(a.x, a.y, t.x, t.y);
    if (options_.reactions) {
        phase_ = Phase::reaction;
        decider_ = target;
        return;
    }
    resolve_attack(kReactNone);
}

void Battle::react(int target, int choice) {
    Event& e = emit(EventType::reaction);
    e.a = static_cast<std::int16_t>(target);
    e.v[0] = choice;
    e.b = static_cast<std::int16_t>(pending_.attacker);
    if (choice != kReactNone) {
        break_aim(target);
        change_initiative(target, -kReactionInitiativeCost, kReaction);
    }
    resolve_attack(choice);
}

void Battle::resolve_attack(int reaction) {
    const PendingAttack p = pending_;
    pending_.active = false;
    Combatant& attacker = cs_[static_cast<std::size_t>(p.attacker)];
    Combatant& target = cs_[static_cast<std::size_t>(p.target)];
    Dms dms = p.dms;
    if (reaction != kReactNone) {
        dms.set(reaction == kReactDodge ? DmName::dodge : DmName::parry, reaction_dm(target, reaction));
    }
    apply_held(p.attacker, dms, 1);
    const bool was_down = target.down;
    const CheckResult r = roll_check(dice_, dms);
    const bool hit = r.effect >= 0;
    int damage = 0;
    std::uint32_t off = static_cast<std::uint32_t>(ints_.size()), count = 0;
    if (hit) {
        int sum = 0;
        for (int k = 0; k < attacker.weapon.damage_count; ++k) {
            const int d = dice_.d6();
            sum += d;
            if (record_) ints_.push_back(d);
        }
        count = static_cast<std::uint32_t>(attacker.weapon.damage_count);
        damage = damage_on_hit(sum, attacker.weapon.damage_modifier, r.effect, target.protection);
        take_damage(p.target, damage);
        summary_.damage_dealt[static_cast<std::size_t>(p.attacker)] += damage;
        summary_.damage_taken[static_cast<std::size_t>(p.target)] += damage;
    }
    Event& e = emit(EventType::attack);
    e.a = static_cast<std::int16_t>(p.attacker);
    e.b = static_cast<std::int16_t>(p.target);
    e.v[0] = p.melee;
    e.f = p.range_m;
    e.v[1] = attacker.x;
    e.v[2] = attacker.y;
    e.v[3] = target.x;
    e.v[4] = target.y;
    e.v[5] = attacker.ammo;
    e.v[6] = reaction;
    e.has_roll = true;
    e.roll[0] = static_cast<std::int8_t>(r.roll[0]);
    e.roll[1] = static_cast<std::int8_t>(r.roll[1]);
    e.dms = dms;
    e.v[7] = r.total;
    e.v[8] = r.effect;
    e.v[9] = hit;
    e.pool_off = off;
    e.pool_n = count;
    e.v[10] = damage;
    e.v[11] = target.protection;
    e.v[12] = target.chars[kSTR];
    e.v[13] = target.chars[kDEX];
    e.v[14] = target.chars[kEND];
    if (target.down && !was_down) incapacitate(p.target, p.attacker);
    phase_ = Phase::turn;
    decider_ = p.attacker;
    if (check_end()) return;
    maybe_auto_end(p.attacker);
}

void Battle::take_damage(int ci, int damage) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    apply_damage(c.chars[kSTR], c.chars[kDEX], c.chars[kEND], damage);
    if (is_incapacitated(c.chars[kSTR], c.chars[kDEX], c.chars[kEND])) {
        c.down = true;
        c.dead = is_dead(c.chars[kSTR], c.chars[kDEX], c.chars[kEND]);
    }
}

void Battle::incapacitate(int ci, int by) {
    Combatant& c = cs_[static_cast<std::size_t>(ci)];
    const bool stays = std::find(group_.begin(), group_.end(), ci) != group_.end();  // R2.5
    Event& e = emit(EventType::incapacitated);
    e.a = static_cast<std::int16_t>(ci);
    e.b = static_cast<std::int16_t>(by);
    e.v[0] = c.dead;
    e.v[1] = stays;
    summary_.dropouts += 1;
    for (int p = pools_.next_of_leader(ci); p >= 0; p = pools_.next_of_leader(ci)) {
        lapse(p, kLeaderIncapacitated);
    }
    if (!stays) c.out = true;
}

void Battle::lapse(int pool_index, int reason) {
    const Pool p = pools_.remove(pool_index);
    Event& e = emit(EventType::lapse);
    e.a = static_cast<std::int16_t>(p.leader);
    e.v[0] = p.kind;
    e.v[1] = p.count;
    e.v[2] = reason;
}

// ------------------------------------------------------------------------ snapshots
// The format is traveller_env/rules/snapshot.py's, field for field (its docstring documents
// it); the refusal messages are its words.
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
