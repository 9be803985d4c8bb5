// Battle: construction, the catalogue and the effects of actions (traveller_env/rules/battle.py).
// Turn sequencing is in sequencing.cpp (sequencing.py), the kinds' legality and dispatch in
// kinds.cpp (kinds.py), the snapshot format in snapshot.cpp (snapshot.py).
#include "traveller/battle.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace traveller {

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

}  // namespace traveller
