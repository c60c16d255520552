// rclev's shim over Fast DDS 2.x (see shim.h for what belongs here and what does not).

#include "rclev-dds/cpp/shim.h"
#include "rclev-dds/src/ffi.rs.h"

#include <cstdint>
#include <cstring>
#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <vector>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/domain/DomainParticipantListener.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/common/InstanceHandle.h>
#include <fastdds/rtps/common/WriteParams.h>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/config.h>
#include <fastrtps/attributes/LibrarySettingsAttributes.h>
#include <fastrtps/utils/IPLocator.h>
#include <fastrtps/xmlparser/XMLProfileManager.h>

// Fast DDS 2.12 added TopicDataType::serialize and getSerializedSizeProvider overloads that
// take a DataRepresentationId_t; older releases (Debian bookworm's 2.9.1) have only the
// two-argument ones.
#if FASTRTPS_VERSION_MAJOR > 2 || (FASTRTPS_VERSION_MAJOR == 2 && FASTRTPS_VERSION_MINOR >= 12)
#define RCLEV_FASTDDS_REPRESENTATION_OVERLOADS 1
#else
#define RCLEV_FASTDDS_REPRESENTATION_OVERLOADS 0
#endif

namespace rclev_dds {

namespace dds = eprosima::fastdds::dds;
namespace rtps = eprosima::fastrtps::rtps;
namespace fastrtps = eprosima::fastrtps;

namespace {

// ---- conversions -------------------------------------------------------------------------

Guid to_guid(const rtps::GUID_t& g) {
    Guid out{};
    std::memcpy(out.bytes.data(), g.guidPrefix.value, 12);
    std::memcpy(out.bytes.data() + 12, g.entityId.value, 4);
    return out;
}

rtps::GUID_t from_guid(const std::array<uint8_t, 16>& bytes) {
    rtps::GUID_t g;
    std::memcpy(g.guidPrefix.value, bytes.data(), 12);
    std::memcpy(g.entityId.value, bytes.data() + 12, 4);
    return g;
}

// SequenceNumber_t {high, low} as one signed 64-bit number; "unknown" ({-1, 0}) is -1.
int64_t to_seq(const rtps::SequenceNumber_t& s) {
    if (s == rtps::SequenceNumber_t::unknown()) {
        return -1;
    }
    return static_cast<int64_t>(s.to64long());
}

rtps::SequenceNumber_t from_seq(int64_t s) {
    if (s < 0) {
        return rtps::SequenceNumber_t::unknown();
    }
    return rtps::SequenceNumber_t(static_cast<uint64_t>(s));
}

SampleIdentity to_identity(const rtps::SampleIdentity& id) {
    SampleIdentity out{};
    out.guid = to_guid(id.writer_guid()).bytes;
    out.seq = to_seq(id.sequence_number());
    out.set = id != rtps::SampleIdentity::unknown();
    return out;
}

int64_t to_ns(const rtps::Time_t& t) {
    return static_cast<int64_t>(t.seconds()) * 1000000000LL + t.nanosec();
}

// Durations cross as nanoseconds, -1 meaning infinite.
int64_t duration_ns(const eprosima::fastrtps::Duration_t& d) {
    if (d == eprosima::fastrtps::c_TimeInfinite) {
        return -1;
    }
    return static_cast<int64_t>(d.seconds) * 1000000000LL + d.nanosec;
}

eprosima::fastrtps::Duration_t from_ns(int64_t ns) {
    if (ns < 0) {
        return eprosima::fastrtps::c_TimeInfinite;
    }
    return eprosima::fastrtps::Duration_t(static_cast<int32_t>(ns / 1000000000LL),
                                          static_cast<uint32_t>(ns % 1000000000LL));
}

uint8_t liveliness_code(dds::LivelinessQosPolicyKind k) {
    switch (k) {
        case dds::MANUAL_BY_TOPIC_LIVELINESS_QOS: return 2;
        case dds::MANUAL_BY_PARTICIPANT_LIVELINESS_QOS: return 1;
        default: return 0;
    }
}

dds::LivelinessQosPolicyKind liveliness_kind(uint8_t code) {
    switch (code) {
        case 2: return dds::MANUAL_BY_TOPIC_LIVELINESS_QOS;
        case 1: return dds::MANUAL_BY_PARTICIPANT_LIVELINESS_QOS;
        default: return dds::AUTOMATIC_LIVELINESS_QOS;
    }
}

// Bytes into a Rust `Vec` in one copy (a `rust::Vec` filled from C++ would cross into Rust
// for every element).
rust::Slice<const uint8_t> as_slice(const uint8_t* data, size_t len) {
    // A slice may not be made from a null pointer, even empty.
    static const uint8_t none = 0;
    return rust::Slice<const uint8_t>(len == 0 ? &none : data, len);
}

rust::Vec<uint8_t> to_vec(const std::vector<uint8_t>& v) {
    return copy_bytes(as_slice(v.data(), v.size()));
}

// Reports an exception that a listener body caught. Never throws: it runs where an exception
// would reach Fast DDS's threads and end the process (std::terminate).
void report_failure(const char* what, const char* detail) noexcept {
    try {
        listener_failed(rust::Str(what), as_slice(reinterpret_cast<const uint8_t*>(detail),
                                                  std::strlen(detail)));
    } catch (...) {
        // Nothing is left to tell; the failure was counted or the process is out of memory.
    }
}

// Runs a listener body on one of Fast DDS's threads: whatever it throws (a name that is not
// UTF-8, an allocation that fails) is caught, counted and reported here, never propagated into
// Fast DDS, where it would terminate the process.
template <typename Body>
void guarded(const char* what, Body&& body) noexcept {
    try {
        body();
    } catch (const std::exception& e) {
        report_failure(what, e.what());
    } catch (...) {
        report_failure(what, "an exception that is not a std::exception");
    }
}

std::vector<uint8_t> from_slice(rust::Slice<const uint8_t> s) {
    return std::vector<uint8_t>(s.begin(), s.end());
}

// ---- the opaque-CDR type -----------------------------------------------------------------

// A sample as the type sees it. Writing: bytes borrowed from Rust (`ptr`, `len`), or an
// encoder that writes them into Fast DDS's payload. Taking: what the reader's Rust sink kept
// of the bytes Fast DDS lent (`taken`: a value decoded from them, or a copy), or refused for
// being longer than `max_len`.
struct BlobSample {
    const uint8_t* ptr = nullptr;
    uint32_t len = 0;
    // Set for `DdsWriter::write_encoded`: `serialize` has the Rust encoder write the sample
    // straight into the payload, which is reserved at `len` bytes (the encoder's capacity).
    PayloadEncoder* encoder = nullptr;

    // Set for taking (take_samples): the sink that decides what to keep of the bytes.
    const ReaderSink* sink = nullptr;
    size_t max_len = SIZE_MAX;
    bool refused = false;
    std::optional<rust::Box<Taken>> taken;
};

// A TopicDataType that carries the ROS DDS type name and passes CDR bytes as they are
// (encapsulation header included): written from Rust's bytes or encoder, and lent to the
// reader's Rust sink when taken, which keeps a decoded message or a copy. Keyless, no
// TypeObject: ROS 2 endpoints match by topic and type name only. Its methods run inside Fast
// DDS calls and never throw.
class BlobType : public dds::TopicDataType {
public:
    explicit BlobType(const std::string& name) {
        setName(name.c_str());
        // The initial size of preallocated payloads; they grow as needed
        // (PREALLOCATED_WITH_REALLOC on every endpoint).
        m_typeSize = 512;
        m_isGetKeyDefined = false;
        auto_fill_type_object(false);
        auto_fill_type_information(false);
    }

    bool serialize(void* data, rtps::SerializedPayload_t* payload) override {
        try {
            auto* s = static_cast<BlobSample*>(data);
            if (payload->max_size < s->len) {
                payload->reserve(s->len);
            }
            if (s->encoder != nullptr) {
                // The payload's bytes are initialized: Fast DDS allocates payloads zeroed
                // (SerializedPayload_t::reserve: calloc, or realloc and memset of the growth).
                size_t written = s->encoder->encode(rust::Slice<uint8_t>(payload->data, s->len));
                // 0: it did not fit (the Rust side encodes it the other way). More than the
                // room given: the encoder is wrong, and Fast DDS would send memory past what
                // it wrote; refused, whatever the Rust side checked.
                if (written == 0 || written > s->len) {
                    return false;
                }
                payload->length = static_cast<uint32_t>(written);
                payload->encapsulation = (written > 1 && payload->data[1] == 1) ? CDR_LE : CDR_BE;
                return true;
            }
            if (s->len > 0) {
                std::memcpy(payload->data, s->ptr, s->len);
            }
            payload->length = s->len;
            // Byte 1 of the encapsulation header: 1 = little-endian CDR.
            payload->encapsulation = (s->len > 1 && s->ptr[1] == 1) ? CDR_LE : CDR_BE;
            return true;
        } catch (...) {
            return false;  // bad_alloc growing the payload: the write fails
        }
    }

#if RCLEV_FASTDDS_REPRESENTATION_OVERLOADS
    bool serialize(void* data, rtps::SerializedPayload_t* payload,
                   dds::DataRepresentationId_t) override {
        return serialize(data, payload);
    }
#endif

    bool deserialize(rtps::SerializedPayload_t* payload, void* data) override {
        auto* s = static_cast<BlobSample*>(data);
        s->len = payload->length;
        if (payload->length > s->max_len) {
            // Longer than the type can be: not copied anywhere (the listener reports it).
            s->refused = true;
            return true;
        }
        if (s->sink == nullptr) {
            return false;  // not a take of rclev's: nothing to keep the sample with
        }
        try {
            // The payload is Fast DDS's (the reader history's change), lent for this call
            // only: the Rust sink decodes it into a typed value right here, or copies it.
            s->taken.emplace(s->sink->keep(as_slice(payload->data, payload->length)));
            return true;
        } catch (...) {
            return false;
        }
    }

    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        uint32_t len = static_cast<BlobSample*>(data)->len;
        return [len]() { return len; };
    }

#if RCLEV_FASTDDS_REPRESENTATION_OVERLOADS
    std::function<uint32_t()> getSerializedSizeProvider(void* data,
                                                        dds::DataRepresentationId_t) override {
        return getSerializedSizeProvider(data);
    }
#endif

    void* createData() override { return new (std::nothrow) BlobSample(); }
    void deleteData(void* data) override { delete static_cast<BlobSample*>(data); }
    bool getKey(void*, rtps::InstanceHandle_t*, bool) override { return false; }
};

// ---- listeners ---------------------------------------------------------------------------

// DDS statuses as EndpointEvents: the counting ones share their fields' names.
template <typename Status>
EndpointEvent counted(EventKind kind, const Status& s) {
    EndpointEvent e{};
    e.kind = kind;
    e.total_count = s.total_count;
    e.total_count_change = s.total_count_change;
    return e;
}

template <typename Status>
EndpointEvent matched(const Status& s, const rtps::InstanceHandle_t& peer) {
    EndpointEvent e = counted(EventKind::Matched, s);
    e.current_count = s.current_count;
    e.current_count_change = s.current_count_change;
    e.peer = to_guid(rtps::iHandle2GUID(peer)).bytes;
    return e;
}

template <typename Status>
EndpointEvent incompatible(const Status& s) {
    EndpointEvent e = counted(EventKind::IncompatibleQos, s);
    e.policy = s.last_policy_id;
    return e;
}

SampleMeta meta_of(const dds::SampleInfo& info, uint32_t len) {
    SampleMeta meta{};
    meta.len = len;
    meta.identity = to_identity(info.sample_identity);
    meta.related = to_identity(info.related_sample_identity);
    meta.source_timestamp_ns = to_ns(info.source_timestamp);
    meta.reception_timestamp_ns = to_ns(info.reception_timestamp);
    return meta;
}

// Takes up to `max` samples out of the reader's history and hands each to the sink as what
// the sink kept of it while deserializing (or reports it refused for its length); how many
// were taken.
size_t take_samples(dds::DataReader* reader, const ReaderSink& sink, size_t max_len,
                    size_t max) {
    BlobSample sample;
    sample.sink = &sink;
    sample.max_len = max_len;
    dds::SampleInfo info;
    size_t taken = 0;
    while (taken < max) {
        sample.taken.reset();
        sample.refused = false;
        if (reader->take_next_sample(&sample, &info) != ReturnCode_t::RETCODE_OK) {
            break;
        }
        ++taken;
        if (!info.valid_data) {
            continue;
        }
        if (sample.refused) {
            sink.on_refused(sample.len, meta_of(info, sample.len));
        } else if (sample.taken.has_value()) {
            rust::Box<Taken> kept = std::move(*sample.taken);
            sample.taken.reset();
            sink.on_sample(std::move(kept), meta_of(info, sample.len));
        }
    }
    return taken;
}

}  // namespace

// A reader's listener. Eager readers take every sample on the receive thread at once (their
// Rust queue keeps the ROS history). Room-limited (KeepAll) readers take only as many as
// their Rust queue has room for, and leave the rest in Fast DDS's history (a few samples:
// KEEP_ALL_READER_SAMPLES), which the worker takes as it makes room (DdsReader::take): a slow
// consumer pushes back on a reliable writer through DDS flow control instead of growing a
// queue. A room-limited reader's takes (listener and worker) are serialized by `take_mutex_`,
// so its samples reach the queue in order; the worker is rung after the take, outside it.
//
// Lock order: Fast DDS calls `on_data_available` holding the reader's own mutex, which every
// take locks too; the worker's take holds `take_mutex_` and then takes that mutex. So the
// listener only *tries* `take_mutex_`: if the worker holds it, the listener leaves the new
// samples to it (`missed_`, which the worker's take reads once it is done and reports as
// "maybe more", so it takes again) instead of waiting for it, which would deadlock.
class ReaderListener : public dds::DataReaderListener {
public:
    ReaderListener(rust::Box<ReaderSink> sink, const ReaderMode& mode)
        : sink_(std::move(sink)), mode_(mode) {}

    const ReaderMode& mode() const { return mode_; }

    // Takes up to `max` samples into the sink; how many (`max` when the listener left new
    // samples to this take meanwhile: take again).
    size_t take(dds::DataReader* reader, size_t max) {
        size_t taken;
        {
            std::lock_guard<std::mutex> lock(take_mutex_);
            taken = take_samples(reader, *sink_, mode_.max_sample_len, max);
        }
        return missed_.exchange(false) ? max : taken;
    }

    void on_data_available(dds::DataReader* reader) override {
        guarded("a reader's on_data_available", [&] {
            if (mode_.room_limited) {
                {
                    std::unique_lock<std::mutex> lock(take_mutex_, std::try_to_lock);
                    if (lock.owns_lock()) {
                        size_t room = sink_->room();
                        if (room > 0) {
                            take_samples(reader, *sink_, mode_.max_sample_len, room);
                        }
                    } else {
                        missed_.store(true);
                    }
                }
                sink_->on_data_available();
            } else {
                take_samples(reader, *sink_, mode_.max_sample_len, SIZE_MAX);
            }
        });
    }

    void on_subscription_matched(dds::DataReader*,
                                 const dds::SubscriptionMatchedStatus& s) override {
        guarded("a reader's on_subscription_matched",
                [&] { sink_->on_event(matched(s, s.last_publication_handle)); });
    }

    void on_requested_incompatible_qos(dds::DataReader*,
                                       const dds::RequestedIncompatibleQosStatus& s) override {
        guarded("a reader's on_requested_incompatible_qos",
                [&] { sink_->on_event(incompatible(s)); });
    }

    void on_requested_deadline_missed(dds::DataReader*,
                                      const dds::RequestedDeadlineMissedStatus& s) override {
        guarded("a reader's on_requested_deadline_missed",
                [&] { sink_->on_event(counted(EventKind::DeadlineMissed, s)); });
    }

    void on_liveliness_changed(dds::DataReader*,
                               const dds::LivelinessChangedStatus& s) override {
        guarded("a reader's on_liveliness_changed", [&] {
            EndpointEvent e{};
            e.kind = EventKind::Liveliness;
            e.total_count = s.alive_count;
            e.total_count_change = s.not_alive_count;
            e.current_count = s.alive_count_change;
            e.current_count_change = s.not_alive_count_change;
            sink_->on_event(e);
        });
    }

    void on_sample_lost(dds::DataReader*, const dds::SampleLostStatus& s) override {
        guarded("a reader's on_sample_lost",
                [&] { sink_->on_event(counted(EventKind::SampleLost, s)); });
    }

private:
    rust::Box<ReaderSink> sink_;
    ReaderMode mode_;
    std::mutex take_mutex_;
    std::atomic<bool> missed_{false};
};

namespace {

class WriterListener : public dds::DataWriterListener {
public:
    explicit WriterListener(rust::Box<WriterSink> sink) : sink_(std::move(sink)) {}

    void on_publication_matched(dds::DataWriter*,
                                const dds::PublicationMatchedStatus& s) override {
        guarded("a writer's on_publication_matched",
                [&] { sink_->on_event(matched(s, s.last_subscription_handle)); });
    }

    void on_offered_incompatible_qos(dds::DataWriter*,
                                     const dds::OfferedIncompatibleQosStatus& s) override {
        guarded("a writer's on_offered_incompatible_qos",
                [&] { sink_->on_event(incompatible(s)); });
    }

    void on_offered_deadline_missed(dds::DataWriter*,
                                    const dds::OfferedDeadlineMissedStatus& s) override {
        guarded("a writer's on_offered_deadline_missed",
                [&] { sink_->on_event(counted(EventKind::DeadlineMissed, s)); });
    }

    void on_liveliness_lost(dds::DataWriter*, const dds::LivelinessLostStatus& s) override {
        guarded("a writer's on_liveliness_lost",
                [&] { sink_->on_event(counted(EventKind::Liveliness, s)); });
    }

private:
    rust::Box<WriterSink> sink_;
};

template <typename Qos>
EndpointQos proxy_qos(const Qos& q) {
    EndpointQos out{};
    out.reliable = q.m_reliability.kind == dds::RELIABLE_RELIABILITY_QOS;
    out.transient_local = q.m_durability.kind != dds::VOLATILE_DURABILITY_QOS;
    out.keep_all = false;
    out.depth = 0;  // SEDP does not carry the history.
    out.deadline_ns = duration_ns(q.m_deadline.period);
    out.lifespan_ns = -1;
    out.liveliness = liveliness_code(q.m_liveliness.kind);
    out.lease_ns = duration_ns(q.m_liveliness.lease_duration);
    return out;
}

class ParticipantListener : public dds::DomainParticipantListener {
public:
    explicit ParticipantListener(rust::Box<GraphSink> sink) : sink_(std::move(sink)) {}

    void on_participant_discovery(dds::DomainParticipant*,
                                  rtps::ParticipantDiscoveryInfo&& info) override {
        guarded("on_participant_discovery", [&] {
            DiscoveredParticipant p{};
            p.guid = to_guid(info.info.m_guid).bytes;
            p.alive = info.status == rtps::ParticipantDiscoveryInfo::DISCOVERED_PARTICIPANT ||
                      info.status == rtps::ParticipantDiscoveryInfo::CHANGED_QOS_PARTICIPANT;
            p.user_data = to_vec(info.info.m_userData.data_vec());
            sink_->on_participant(p);
        });
    }

    // Names cross as bytes: a peer may announce any bytes as a topic or type name, and
    // rust::String's constructor throws on bytes that are not UTF-8. Rust decides what they
    // mean.
    template <typename Info>
    void endpoint(bool writer, bool alive, const Info& info) {
        DiscoveredEndpoint e{};
        e.writer = writer;
        e.alive = alive;
        e.guid = to_guid(info.guid()).bytes;
        const auto& topic = info.topicName();
        const auto& type = info.typeName();
        e.topic = copy_bytes(as_slice(reinterpret_cast<const uint8_t*>(topic.c_str()),
                                      topic.size()));
        e.type_name = copy_bytes(as_slice(reinterpret_cast<const uint8_t*>(type.c_str()),
                                          type.size()));
        e.user_data = to_vec(info.m_qos.m_userData.data_vec());
        e.qos = proxy_qos(info.m_qos);
        e.qos.lifespan_ns = lifespan_of(info);
        sink_->on_endpoint(e);
    }

    // Only writers announce a lifespan.
    static int64_t lifespan_of(const rtps::WriterProxyData& w) {
        return duration_ns(w.m_qos.m_lifespan.duration);
    }
    static int64_t lifespan_of(const rtps::ReaderProxyData&) { return -1; }

    void on_subscriber_discovery(dds::DomainParticipant*,
                                 rtps::ReaderDiscoveryInfo&& info) override {
        guarded("on_subscriber_discovery", [&] {
            endpoint(false,
                     info.status == rtps::ReaderDiscoveryInfo::DISCOVERED_READER ||
                         info.status == rtps::ReaderDiscoveryInfo::CHANGED_QOS_READER,
                     info.info);
        });
    }

    void on_publisher_discovery(dds::DomainParticipant*,
                                rtps::WriterDiscoveryInfo&& info) override {
        guarded("on_publisher_discovery", [&] {
            endpoint(true,
                     info.status == rtps::WriterDiscoveryInfo::DISCOVERED_WRITER ||
                         info.status == rtps::WriterDiscoveryInfo::CHANGED_QOS_WRITER,
                     info.info);
        });
    }

private:
    rust::Box<GraphSink> sink_;
};

}  // namespace

// ---- participant -------------------------------------------------------------------------

class ParticipantCore {
public:
    ParticipantCore(dds::DomainParticipant* participant,
                    std::unique_ptr<ParticipantListener> listener)
        : participant_(participant), listener_(std::move(listener)) {
        publisher_ = participant_->create_publisher(dds::PUBLISHER_QOS_DEFAULT);
        subscriber_ = participant_->create_subscriber(dds::SUBSCRIBER_QOS_DEFAULT);
        if (publisher_ == nullptr || subscriber_ == nullptr) {
            // The destructor will not run: delete the participant here, before its listener
            // (a member) goes.
            participant_->set_listener(nullptr, std::chrono::seconds(1));
            participant_->delete_contained_entities();
            dds::DomainParticipantFactory::get_instance()->delete_participant(participant_);
            throw std::runtime_error("Fast DDS could not create the publisher or subscriber");
        }
    }

    ~ParticipantCore() {
        // The listener (and its Rust sink) is a member, destroyed only after this body: a
        // discovery callback that runs while the participant is deleted still finds it.
        //
        // Detached first, with a finite timeout, retried: Fast DDS 2.14's set_listener waits
        // for callbacks in flight, and with its default (infinite) timeout the PyPI build's
        // libstdc++ turns that wait into a spin that holds the participant's listener mutex
        // while the discovery thread inside a callback waits for it — a hang at exit when a
        // peer leaves at the same moment (tests/shm/RESULTS.md). delete_participant makes
        // that infinite wait itself (DomainParticipantImpl::disable); once detached, it finds
        // no listener and returns at once. A finite wait is a real blocking wait, so the
        // callback finishes and the detach succeeds; the bound keeps a participant that cannot
        // detach from blocking exit for more than a few seconds.
        for (int attempt = 0; attempt < 5; ++attempt) {
            if (participant_->set_listener(nullptr, std::chrono::seconds(1)) ==
                ReturnCode_t::RETCODE_OK) {
                break;
            }
        }
        participant_->delete_contained_entities();
        dds::DomainParticipantFactory::get_instance()->delete_participant(participant_);
    }

    // The topic of that name, created with the type of that name on first use. Each
    // endpoint holds one reference (release_topic gives it back); a topic without endpoints is
    // deleted, so that the name may later be used with another type.
    dds::Topic* acquire_topic(const std::string& name, const std::string& type_name) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = topics_.find(name);
        if (it != topics_.end()) {
            if (it->second.first->get_type_name() != type_name) {
                throw std::runtime_error("topic '" + name + "' exists in this participant with type '" +
                                         it->second.first->get_type_name() + "', not '" +
                                         type_name + "'");
            }
            it->second.second += 1;
            return it->second.first;
        }
        if (participant_->find_type(type_name).empty()) {
            dds::TypeSupport type(new BlobType(type_name));
            if (type.register_type(participant_) != ReturnCode_t::RETCODE_OK) {
                throw std::runtime_error("Fast DDS refused to register type '" + type_name + "'");
            }
        }
        dds::Topic* topic = participant_->create_topic(name, type_name, dds::TOPIC_QOS_DEFAULT);
        if (topic == nullptr) {
            throw std::runtime_error("Fast DDS could not create topic '" + name + "'");
        }
        topics_.emplace(name, std::make_pair(topic, 1));
        return topic;
    }

    void release_topic(const std::string& name) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = topics_.find(name);
        if (it != topics_.end() && --it->second.second == 0) {
            participant_->delete_topic(it->second.first);
            topics_.erase(it);
        }
    }

    dds::DomainParticipant* participant_;
    dds::Publisher* publisher_ = nullptr;
    dds::Subscriber* subscriber_ = nullptr;

private:
    std::unique_ptr<ParticipantListener> listener_;
    std::mutex mutex_;  // guards topics_
    std::map<std::string, std::pair<dds::Topic*, int>> topics_;
};

DdsParticipant::DdsParticipant(std::shared_ptr<ParticipantCore> core) : core_(std::move(core)) {}
DdsParticipant::~DdsParticipant() = default;

Guid DdsParticipant::guid() const { return to_guid(core_->participant_->guid()); }

rust::String engine_version() { return rust::String(FASTRTPS_VERSION_STR); }

std::unique_ptr<DdsParticipant> create_participant(const ParticipantConfig& config,
                                                   rust::Box<GraphSink> sink) {
    auto* factory = dds::DomainParticipantFactory::get_instance();
    // XML profiles named by FASTRTPS_DEFAULT_PROFILES_FILE apply, as in rmw_fastrtps.
    factory->load_profiles();
    // No synchronous intra-process delivery: with it, a write takes the lock of every reader
    // of the process it delivers to, on the writing thread. rclev may run a subscription's
    // callback inside its reader's listener, with that reader's lock held (direct delivery),
    // so two such callbacks publishing to each other's topics would take two reader locks in
    // opposite orders. Endpoints of one process talk over shared memory or loopback instead.
    // Process-wide, after the XML profiles (which may set it too) and before any matching.
    fastrtps::LibrarySettingsAttributes library;
    library.intraprocess_delivery = fastrtps::INTRAPROCESS_OFF;
    fastrtps::xmlparser::XMLProfileManager::library_settings(library);
    dds::DomainParticipantQos qos = factory->get_default_participant_qos();

    // Discovery as rmw_fastrtps sets it up for ROS_AUTOMATIC_DISCOVERY_RANGE (rclev's Rust
    // side has already folded ROS_LOCALHOST_ONLY into the range).
    auto& builtin = qos.wire_protocol().builtin;
    auto udp = std::make_shared<eprosima::fastdds::rtps::UDPv4TransportDescriptor>();
    switch (config.range) {
        case DiscoveryRange::Off:
            qos.allocation().participants.initial = 1;
            qos.allocation().participants.maximum = 1;
            qos.allocation().participants.increment = 0;
            builtin.metatrafficMulticastLocatorList.clear();
            builtin.metatrafficUnicastLocatorList.push_back(rtps::Locator_t());
            break;
        case DiscoveryRange::Localhost:
            builtin.metatrafficMulticastLocatorList.clear();
            builtin.metatrafficUnicastLocatorList.push_back(rtps::Locator_t());
            // Participant ids 0..32 on localhost get the announcements: about the number
            // of ROS 2 processes that can find each other on one host.
            udp->maxInitialPeersRange = 32;
            break;
        case DiscoveryRange::Subnet:
        case DiscoveryRange::SystemDefault:
            break;
    }
    // Transports: shared memory only when the Rust side knows it safe (the same Fast DDS
    // release line as the peers'), UDPv4 always.
    if (config.range == DiscoveryRange::Localhost || !config.shared_memory) {
        qos.transport().use_builtin_transports = false;
        if (config.shared_memory) {
            qos.transport().user_transports.push_back(
                std::make_shared<eprosima::fastdds::rtps::SharedMemTransportDescriptor>());
        }
        qos.transport().user_transports.push_back(udp);
    }
    if (config.range == DiscoveryRange::Localhost || config.range == DiscoveryRange::Subnet) {
        for (const auto& peer : config.static_peers) {
            std::string address(peer.data(), peer.size());
            auto resolved = rtps::IPLocator::resolveNameDNS(address);
            if (resolved.first.empty()) {
                throw std::runtime_error("cannot resolve ROS_STATIC_PEERS entry '" + address + "'");
            }
            rtps::Locator_t locator;
            rtps::IPLocator::setIPv4(locator, *resolved.first.begin());
            builtin.initialPeersList.push_back(locator);
        }
    }
    if (config.range == DiscoveryRange::Localhost) {
        rtps::Locator_t locator;
        rtps::IPLocator::setIPv4(locator, "127.0.0.1");
        builtin.initialPeersList.push_back(locator);
    }
    if (config.range == DiscoveryRange::Subnet && !builtin.initialPeersList.empty()) {
        // With static peers, keep announcing on the default multicast group too.
        rtps::Locator_t locator;
        rtps::IPLocator::setIPv4(locator, 239, 255, 0, 1);
        builtin.initialPeersList.push_back(locator);
    }
    qos.user_data().data_vec(std::vector<uint8_t>(config.user_data.begin(), config.user_data.end()));
    qos.name(std::string(config.name.data(), config.name.size()));
    builtin.readerHistoryMemoryPolicy = rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    builtin.writerHistoryMemoryPolicy = rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;

    auto listener = std::make_unique<ParticipantListener>(std::move(sink));
    dds::DomainParticipant* participant = factory->create_participant(
        config.domain_id, qos, listener.get(), dds::StatusMask::none());
    if (participant == nullptr) {
        throw std::runtime_error("Fast DDS could not create a participant in domain " +
                                 std::to_string(config.domain_id));
    }
    auto core = std::make_shared<ParticipantCore>(participant, std::move(listener));
    return std::make_unique<DdsParticipant>(std::move(core));
}

// ---- writers -----------------------------------------------------------------------------

DdsWriter::DdsWriter(std::shared_ptr<ParticipantCore> core, std::string topic,
                     dds::DataWriter* writer, std::unique_ptr<dds::DataWriterListener> listener)
    : core_(std::move(core)), topic_(std::move(topic)), writer_(writer),
      listener_(std::move(listener)) {}

DdsWriter::~DdsWriter() {
    // Deleting the writer waits for a listener call in flight and stops the rest; the
    // listener member outlives that, so the writer's listener needs no detaching first.
    core_->publisher_->delete_datawriter(writer_);
    core_->release_topic(topic_);
}

namespace {
// One write with the related sample identity (if set) as inline QoS.
SampleIdentity write_blob(dds::DataWriter* writer, const std::string& topic, BlobSample& sample,
                          const SampleIdentity& related) {
    rtps::WriteParams params;
    if (related.set) {
        rtps::SampleIdentity id;
        id.writer_guid(from_guid(related.guid));
        id.sequence_number(from_seq(related.seq));
        params.related_sample_identity(id);
    }
    if (!writer->write(&sample, params)) {
        throw std::runtime_error("Fast DDS DataWriter::write failed on '" + topic + "'");
    }
    return to_identity(params.sample_identity());
}
}  // namespace

SampleIdentity DdsWriter::write(rust::Slice<const uint8_t> data,
                                const SampleIdentity& related) const {
    if (data.size() > UINT32_MAX) {
        // RTPS payload lengths are 32-bit: cut to that, the sample would be another one.
        throw std::length_error("a sample of " + std::to_string(data.size()) +
                                " bytes is longer than a DDS sample can be (4 GiB)");
    }
    BlobSample sample;
    sample.ptr = data.data();
    sample.len = static_cast<uint32_t>(data.size());
    return write_blob(writer_, topic_, sample, related);
}

SampleIdentity DdsWriter::write_encoded(uint32_t capacity, PayloadEncoder& encoder,
                                        const SampleIdentity& related) const {
    BlobSample sample;
    sample.len = capacity;
    sample.encoder = &encoder;
    return write_blob(writer_, topic_, sample, related);
}

Guid DdsWriter::guid() const { return to_guid(writer_->guid()); }

template <typename Q>
void apply_common_qos(Q& q, const EndpointQos& in) {
    q.history().kind = in.keep_all ? dds::KEEP_ALL_HISTORY_QOS : dds::KEEP_LAST_HISTORY_QOS;
    q.history().depth = in.keep_all ? 1 : static_cast<int32_t>(in.depth);
    q.reliability().kind =
        in.reliable ? dds::RELIABLE_RELIABILITY_QOS : dds::BEST_EFFORT_RELIABILITY_QOS;
    q.durability().kind =
        in.transient_local ? dds::TRANSIENT_LOCAL_DURABILITY_QOS : dds::VOLATILE_DURABILITY_QOS;
    q.deadline().period = from_ns(in.deadline_ns);
    q.liveliness().kind = liveliness_kind(in.liveliness);
    q.liveliness().lease_duration = from_ns(in.lease_ns);
    if (in.lease_ns > 0) {
        // As rmw_fastrtps: announce at 2/3 of the lease.
        q.liveliness().announcement_period = from_ns(in.lease_ns * 2 / 3);
    }
    q.endpoint().history_memory_policy = rtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE;
    q.data_sharing().off();
}

std::unique_ptr<DdsWriter> create_writer(const DdsParticipant& participant, rust::Str topic,
                                         rust::Str type_name, const EndpointQos& qos,
                                         rust::Slice<const uint8_t> user_data,
                                         rust::Box<WriterSink> sink) {
    auto core = participant.core_;
    std::string topic_name(topic.data(), topic.size());
    dds::Topic* t = core->acquire_topic(topic_name, std::string(type_name.data(), type_name.size()));
    dds::DataWriterQos q = core->publisher_->get_default_datawriter_qos();
    apply_common_qos(q, qos);
    q.lifespan().duration = from_ns(qos.lifespan_ns);
    q.publish_mode().kind = dds::SYNCHRONOUS_PUBLISH_MODE;
    q.representation().m_value.clear();
    q.representation().m_value.push_back(dds::XCDR_DATA_REPRESENTATION);
    q.user_data().data_vec(from_slice(user_data));
    auto listener = std::make_unique<WriterListener>(std::move(sink));
    dds::DataWriter* w =
        core->publisher_->create_datawriter(t, q, listener.get(), dds::StatusMask::all());
    if (w == nullptr) {
        core->release_topic(topic_name);
        throw std::runtime_error("Fast DDS could not create a writer on '" + topic_name + "'");
    }
    return std::make_unique<DdsWriter>(core, topic_name, w, std::move(listener));
}

// ---- readers -----------------------------------------------------------------------------

DdsReader::DdsReader(std::shared_ptr<ParticipantCore> core, std::string topic,
                     dds::DataReader* reader, std::unique_ptr<ReaderListener> listener)
    : core_(std::move(core)), topic_(std::move(topic)), reader_(reader),
      listener_(std::move(listener)) {}

DdsReader::~DdsReader() {
    // As ~DdsWriter: deleting the reader waits for a listener call in flight and stops the
    // rest; the listener member outlives it.
    core_->subscriber_->delete_datareader(reader_);
    core_->release_topic(topic_);
}

Guid DdsReader::guid() const { return to_guid(reader_->guid()); }

size_t DdsReader::take(size_t max) const { return listener_->take(reader_, max); }

std::unique_ptr<DdsReader> create_reader(const DdsParticipant& participant, rust::Str topic,
                                         rust::Str type_name, const EndpointQos& qos,
                                         rust::Slice<const uint8_t> user_data,
                                         const ReaderMode& mode, rust::Box<ReaderSink> sink) {
    auto core = participant.core_;
    std::string topic_name(topic.data(), topic.size());
    dds::Topic* t = core->acquire_topic(topic_name, std::string(type_name.data(), type_name.size()));
    dds::DataReaderQos q = core->subscriber_->get_default_datareader_qos();
    apply_common_qos(q, qos);
    if (mode.room_limited) {
        // Beside the Rust queue, which holds up to its byte budget (rclev-dds/src/inbox.rs),
        // Fast DDS holds only a few: when both are full, a reliable writer is pushed back.
        int32_t samples = static_cast<int32_t>(mode.history_samples);
        q.resource_limits().max_samples = samples;
        q.resource_limits().max_samples_per_instance = samples;
        q.resource_limits().allocated_samples = samples;
    }
    q.type_consistency().representation.m_value.clear();
    q.type_consistency().representation.m_value.push_back(dds::XCDR_DATA_REPRESENTATION);
    q.user_data().data_vec(from_slice(user_data));
    auto listener = std::make_unique<ReaderListener>(std::move(sink), mode);
    dds::DataReader* r =
        core->subscriber_->create_datareader(t, q, listener.get(), dds::StatusMask::all());
    if (r == nullptr) {
        core->release_topic(topic_name);
        throw std::runtime_error("Fast DDS could not create a reader on '" + topic_name + "'");
    }
    return std::make_unique<DdsReader>(core, topic_name, r, std::move(listener));
}

}  // namespace rclev_dds
