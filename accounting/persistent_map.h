// PersistentMap: an immutable sorted map whose updates return a new map that
// shares every untouched entry with the old one.
//
// A treap with path copying: set() and erase() copy O(log n) nodes and leave
// the original map as it was, so a reader holding the previous ledger state
// keeps a consistent view while a decision builds the next one. A node's
// priority is a hash of its key, so a key set always has the same shape.
// Values are held through shared_ptr<const V>: copying a path never copies a
// record. Not thread-safe for one object; distinct copies may be used freely.
#pragma once

#include <cstddef>
#include <functional>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace vri {

template <typename K, typename V>
class PersistentMap {
  struct Node;
  using NodePtr = std::shared_ptr<const Node>;
  struct Node {
    K key;
    std::shared_ptr<const V> value;
    size_t priority;
    NodePtr left, right;
    size_t size;
  };

 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using difference_type = std::ptrdiff_t;
    using value_type = std::pair<const K&, const V&>;
    using reference = value_type;
    using pointer = void;
    std::pair<const K&, const V&> operator*() const { return {path_.back()->key, *path_.back()->value}; }
    // The shared record itself: the same pointer in every map version that did not replace it.
    const std::shared_ptr<const V>& shared() const { return path_.back()->value; }
    const_iterator& operator++() {
      const Node* node = path_.back();
      path_.pop_back();
      descendLeft(node->right.get());
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator old = *this;
      ++*this;
      return old;
    }
    friend bool operator==(const const_iterator& a, const const_iterator& b) { return a.path_ == b.path_; }

   private:
    friend class PersistentMap;
    void descendLeft(const Node* node) {
      for (; node != nullptr; node = node->left.get()) path_.push_back(node);
    }
    std::vector<const Node*> path_;  // the current node and its ancestors still to visit
  };

  PersistentMap() = default;

  size_t size() const { return root_ ? root_->size : 0; }
  bool empty() const { return root_ == nullptr; }

  const V* find(const K& key) const {
    const Node* node = lookup(key);
    return node != nullptr ? node->value.get() : nullptr;
  }
  // The shared record itself, for callers that keep it beyond the map.
  std::shared_ptr<const V> findShared(const K& key) const {
    const Node* node = lookup(key);
    return node != nullptr ? node->value : nullptr;
  }
  size_t count(const K& key) const { return find(key) != nullptr ? 1 : 0; }
  const V& at(const K& key) const {
    const V* value = find(key);
    if (value == nullptr) throw std::out_of_range("PersistentMap::at");
    return *value;
  }

  // A new map with `key` bound to `value`; this one is unchanged.
  [[nodiscard]] PersistentMap set(const K& key, V value) const {
    return PersistentMap(insert(root_, key, std::make_shared<const V>(std::move(value)), priorityOf(key)));
  }
  [[nodiscard]] PersistentMap erase(const K& key) const { return PersistentMap(remove(root_, key)); }

  const_iterator begin() const {
    const_iterator it;
    it.descendLeft(root_.get());
    return it;
  }
  const_iterator end() const { return {}; }

  // Whether two maps hold the very same record for `key` (both absent counts as the same).
  bool sharesEntry(const PersistentMap& other, const K& key) const { return findShared(key) == other.findShared(key); }

 private:
  explicit PersistentMap(NodePtr root) : root_(std::move(root)) {}

  const Node* lookup(const K& key) const {
    const Node* node = root_.get();
    while (node != nullptr && (key < node->key || node->key < key)) {
      node = key < node->key ? node->left.get() : node->right.get();
    }
    return node;
  }

  static size_t priorityOf(const K& key) { return std::hash<K>{}(key); }
  static size_t sizeOf(const NodePtr& node) { return node ? node->size : 0; }
  // Heap order on (priority, key): unique, so the shape depends on the keys alone.
  static bool above(size_t priority, const K& key, const Node& node) {
    return priority != node.priority ? priority > node.priority : key < node.key;
  }
  static NodePtr make(const K& key, std::shared_ptr<const V> value, size_t priority, NodePtr left, NodePtr right) {
    const size_t size = 1 + sizeOf(left) + sizeOf(right);
    return std::make_shared<const Node>(Node{key, std::move(value), priority, std::move(left), std::move(right), size});
  }
  static NodePtr with(const Node& node, NodePtr left, NodePtr right) {
    return make(node.key, node.value, node.priority, std::move(left), std::move(right));
  }

  // Splits a tree that does not hold `key` into the keys below and above it.
  static std::pair<NodePtr, NodePtr> split(const NodePtr& node, const K& key) {
    if (!node) return {nullptr, nullptr};
    if (node->key < key) {
      auto [low, high] = split(node->right, key);
      return {with(*node, node->left, std::move(low)), std::move(high)};
    }
    auto [low, high] = split(node->left, key);
    return {std::move(low), with(*node, std::move(high), node->right)};
  }

  static NodePtr merge(const NodePtr& low, const NodePtr& high) {
    if (!low) return high;
    if (!high) return low;
    if (above(low->priority, low->key, *high)) return with(*low, low->left, merge(low->right, high));
    return with(*high, merge(low, high->left), high->right);
  }

  static NodePtr insert(const NodePtr& node, const K& key, std::shared_ptr<const V> value, size_t priority) {
    if (!node) return make(key, std::move(value), priority, nullptr, nullptr);
    if (!(key < node->key) && !(node->key < key)) return make(key, std::move(value), priority, node->left, node->right);
    if (above(priority, key, *node)) {
      // The key is not below this node (it would rank under it): it becomes the root here.
      auto [low, high] = split(node, key);
      return make(key, std::move(value), priority, std::move(low), std::move(high));
    }
    if (key < node->key) return with(*node, insert(node->left, key, std::move(value), priority), node->right);
    return with(*node, node->left, insert(node->right, key, std::move(value), priority));
  }

  static NodePtr remove(const NodePtr& node, const K& key) {
    if (!node) return nullptr;
    if (key < node->key) {
      NodePtr left = remove(node->left, key);
      return left == node->left ? node : with(*node, std::move(left), node->right);
    }
    if (node->key < key) {
      NodePtr right = remove(node->right, key);
      return right == node->right ? node : with(*node, node->left, std::move(right));
    }
    return merge(node->left, node->right);
  }

  NodePtr root_;
};

}  // namespace vri
