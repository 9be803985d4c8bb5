// The battle map (R8.1): traveller_env/rules/grid.py.
//
// Squares are 1.5 m; x runs east, y south. Line of sight and cover use the same exact integer
// segment test as grid._segment_enters_square (doubled coordinates, one common denominator).
// Distances are sqrt(dx*dx + dy*dy) * 1.5, which equals Python's math.hypot(dx, dy) * 1.5 bit for
// bit for every integer pair on a map up to 1000 squares (tests/core/test_core_engine.py checks).
// A Grid never changes during a battle; battles of one scenario share one (read-only; the lazy
// line-of-sight and cover tables are the only mutable part, filled on first use).
#pragma once

#include <sys/mman.h>

#include <memory>
#include <new>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "movement.hpp"

namespace traveller {

enum Terrain : std::uint8_t { kOpen = 0, kDifficult = 1, kCover = 2, kWall = 3 };

// Compass directions in grid.DIRECTIONS order; north is -y.
inline constexpr int kNumDirs = 8;
inline constexpr int kDirDx[kNumDirs] = {0, 1, 1, 1, 0, -1, -1, -1};
inline constexpr int kDirDy[kNumDirs] = {-1, -1, 0, 1, 1, 1, 0, -1};
inline const char* const kDirNames[kNumDirs] = {"N", "NE", "E", "SE", "S", "SW", "W", "NW"};

// Does the segment between the centres of a and b pass through the interior of sq?
constexpr bool segment_enters_square(int ax, int ay, int bx, int by, int sx, int sy) noexcept {
    const long long x0 = 2LL * ax + 1, y0 = 2LL * ay + 1;
    const long long dx = 2LL * (bx - ax), dy = 2LL * (by - ay);
    const long long den = (dx != 0 ? (dx < 0 ? -dx : dx) : 1) * (dy != 0 ? (dy < 0 ? -dy : dy) : 1);
    long long t_lo = 0, t_hi = den;
    const long long p0s[2] = {x0, y0}, ds[2] = {dx, dy}, los[2] = {2LL * sx, 2LL * sy};
    for (int k = 0; k < 2; ++k) {
        const long long p0 = p0s[k], d = ds[k], lo = los[k], hi = lo + 2;
        if (d == 0) {
            if (!(lo < p0 && p0 < hi)) return false;
            continue;
        }
        const long long scale = den / d;  // exact, sign included
        long long t1 = (lo - p0) * scale, t2 = (hi - p0) * scale;
        if (t1 > t2) {
            const long long t = t1;
            t1 = t2;
            t2 = t;
        }
        if (t1 > t_lo) t_lo = t1;
        if (t2 < t_hi) t_hi = t2;
        if (t_lo >= t_hi) return false;
    }
    return t_lo < t_hi;
}

// Why a walk stopped short (grid.GridMap.walk's reasons).
enum class WalkStop : std::uint8_t { none, leaves_map, wall, corner, cost };

inline constexpr int kMaxPath = 64;  // movement <= 60 m: at most 40 squares per Move

struct Walk {
    int n = 0;               // squares in `path` (the legal prefix; + the failing square on cost)
    int px[kMaxPath] = {};
    int py[kMaxPath] = {};
    WalkStop stop = WalkStop::none;
    int step = 0;            // the refused step (1-based)
    int fx = 0, fy = 0;      // the wall square entered (WalkStop::wall)
    double spent = 0.0;      // metres spent up to the refused step (WalkStop::cost)
    bool cost_failure() const noexcept { return stop == WalkStop::cost; }
};

class Grid {
public:
    Grid(int width, int height, std::vector<std::uint8_t> terrain)
        : width_(width), height_(height), terrain_(std::move(terrain)) {
        for (int y = 0; y < height_; ++y) {
            for (int x = 0; x < width_; ++x) {
                const auto t = at(x, y);
                if (t == kWall) walls_.push_back(y * width_ + x);
                if (t == kCover) cover_.push_back(y * width_ + x);
            }
        }
        const long long n = static_cast<long long>(width_) * height_;
        if (n <= kMaxTableSquares) {
            const auto cells = static_cast<std::size_t>(n * n);
            if (!walls_.empty()) los_table_.allocate(cells);
            if (!cover_.empty()) cover_table_.allocate(cells);
        }
    }

    int width() const noexcept { return width_; }
    int height() const noexcept { return height_; }
    std::uint8_t at(int x, int y) const noexcept {
        return terrain_[static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) +
                        static_cast<std::size_t>(x)];
    }
    bool in_bounds(int x, int y) const noexcept {
        return 0 <= x && x < width_ && 0 <= y && y < height_;
    }
    bool is_wall(int x, int y) const noexcept { return in_bounds(x, y) && at(x, y) == kWall; }
    bool is_cover(int x, int y) const noexcept { return in_bounds(x, y) && at(x, y) == kCover; }
    // The map has low cover somewhere (GridMap.cover_squares is not empty).
    bool has_cover() const noexcept { return !cover_.empty(); }
    double step_cost_m(int x, int y) const noexcept {
        return at(x, y) == kDifficult ? 2 * kSquareM : kSquareM;
    }
    bool cuts_corner(int fx, int fy, int tx, int ty) const noexcept {
        const int dx = tx - fx, dy = ty - fy;
        if (dx == 0 || dy == 0) return false;
        return is_wall(fx + dx, fy) || is_wall(fx, fy + dy);
    }

    static double distance_m(int ax, int ay, int bx, int by) noexcept {
        const double dx = ax - bx, dy = ay - by;
        return std::sqrt(dx * dx + dy * dy) * kSquareM;
    }

    // R4.6/R8.1: walk up to `squares` steps ignoring other combatants (GridMap.walk).
    void walk(int x, int y, int dir, double budget_m, int squares, Walk& w) const noexcept {
        const int dx = kDirDx[dir], dy = kDirDy[dir];
        w.n = 0;
        w.stop = WalkStop::none;
        double spent = 0.0;
        for (int step = 1; step <= squares; ++step) {
            const int nx = x + dx, ny = y + dy;
            w.step = step;
            if (!in_bounds(nx, ny)) {
                w.stop = WalkStop::leaves_map;
                return;
            }
            if (at(nx, ny) == kWall) {
                w.stop = WalkStop::wall;
                w.fx = nx;
                w.fy = ny;
                return;
            }
            if (cuts_corner(x, y, nx, ny)) {
                w.stop = WalkStop::corner;
                return;
            }
            spent += step_cost_m(nx, ny);
            if (step > 1 && spent > budget_m + 1e-9) {
                w.px[w.n] = nx;
                w.py[w.n] = ny;
                ++w.n;
                w.stop = WalkStop::cost;
                w.spent = spent;
                return;
            }
            w.px[w.n] = nx;
            w.py[w.n] = ny;
            ++w.n;
            x = nx;
            y = ny;
        }
    }

    // The static reach of a Move in direction `dir` (GridMap.reach): the most squares ignoring
    // other combatants.
    int static_reach(int x, int y, int dir, double budget_m, int limit) const noexcept {
        Walk w;
        walk(x, y, dir, budget_m, limit, w);
        return w.cost_failure() ? w.n - 1 : w.n;
    }

    // R8.1: the centre-to-centre segment crosses no wall square.
    bool line_of_sight(int ax, int ay, int bx, int by) const noexcept {
        if (walls_.empty()) return true;
        if (!los_table_.empty()) {
            const std::size_t i = pair_index(ax, ay, bx, by);
            std::uint8_t v = los_table_.get(i);
            if (v == 0) {
                v = crossed_any(ax, ay, bx, by, walls_) ? 1 : 2;
                los_table_.set(i, v);
            }
            return v == 2;
        }
        return !crossed_any(ax, ay, bx, by, walls_);
    }

    // The segment passes through a low-cover square adjacent to the target (the stance is the
    // caller's to check).
    bool cover_between(int sx, int sy, int tx, int ty) const noexcept {
        if (cover_.empty()) return false;
        if (!cover_table_.empty()) {
            const std::size_t i = pair_index(sx, sy, tx, ty);
            std::uint8_t v = cover_table_.get(i);
            if (v == 0) {
                v = cover_uncached(sx, sy, tx, ty) ? 2 : 1;
                cover_table_.set(i, v);
            }
            return v == 2;
        }
        return cover_uncached(sx, sy, tx, ty);
    }

private:
    static constexpr long long kMaxTableSquares = 2500;

    std::size_t pair_index(int ax, int ay, int bx, int by) const noexcept {
        const auto n = static_cast<std::size_t>(width_) * static_cast<std::size_t>(height_);
        const auto a = static_cast<std::size_t>(ay) * static_cast<std::size_t>(width_) +
                       static_cast<std::size_t>(ax);
        const auto b = static_cast<std::size_t>(by) * static_cast<std::size_t>(width_) +
                       static_cast<std::size_t>(bx);
        return a * n + b;
    }

    bool crosses(int ax, int ay, int bx, int by, int sx, int sy) const noexcept {
        const int lo_x = ax < bx ? ax : bx, hi_x = ax < bx ? bx : ax;
        const int lo_y = ay < by ? ay : by, hi_y = ay < by ? by : ay;
        if (sx < lo_x || sx > hi_x || sy < lo_y || sy > hi_y) return false;
        if ((sx == ax && sy == ay) || (sx == bx && sy == by)) return false;
        return segment_enters_square(ax, ay, bx, by, sx, sy);
    }

    bool crossed_any(int ax, int ay, int bx, int by, const std::vector<int>& squares) const noexcept {
        for (int s : squares) {
            if (crosses(ax, ay, bx, by, s % width_, s / width_)) return true;
        }
        return false;
    }

    bool cover_uncached(int sx, int sy, int tx, int ty) const noexcept {
        for (int dx = -1; dx <= 1; ++dx) {
            for (int dy = -1; dy <= 1; ++dy) {
                if ((dx || dy) && is_cover(tx + dx, ty + dy) &&
                    crosses(sx, sy, tx, ty, tx + dx, ty + dy)) {
                    return true;
                }
            }
        }
        return false;
    }

    int width_, height_;
    std::vector<std::uint8_t> terrain_;
    std::vector<int> walls_, cover_;
    // A lazily filled table shared by every battle (and thread) of a scenario. Its bytes are
    // an anonymous mapping of zero pages, so the pages of pairs never asked about are never
    // touched: a scenario set holds a table per map, and value-initialised (or heap-calloc'd)
    // tables made every page resident (about 0.4 MB per map of gen:squad). Cells are read and
    // written with relaxed atomic builtins, since two threads may fill the same cell (with
    // the same value) at once.
    class LazyTable {
    public:
        bool empty() const noexcept { return !cells_; }
        void allocate(std::size_t n) {
            void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                             -1, 0);
            if (p == MAP_FAILED) throw std::bad_alloc();
            cells_ = Cells(static_cast<std::uint8_t*>(p), Unmap(n));
        }
        std::uint8_t get(std::size_t i) const noexcept {
            return __atomic_load_n(&cells_[i], __ATOMIC_RELAXED);
        }
        void set(std::size_t i, std::uint8_t v) const noexcept {
            __atomic_store_n(&cells_[i], v, __ATOMIC_RELAXED);
        }

    private:
        struct Unmap {
            Unmap() noexcept : bytes(0) {}
            explicit Unmap(std::size_t n) noexcept : bytes(n) {}
            std::size_t bytes;
            void operator()(std::uint8_t* p) const noexcept { ::munmap(p, bytes); }
        };
        using Cells = std::unique_ptr<std::uint8_t[], Unmap>;
        Cells cells_;
    };
    LazyTable los_table_, cover_table_;  // 0 unknown, 1 no, 2 yes
};

}  // namespace traveller
