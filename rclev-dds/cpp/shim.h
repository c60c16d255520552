// rclev's shim over eProsima Fast DDS 2.x: plumbing only.
//
// What lives here: a participant with the discovery set-up rclev asks for, one opaque-CDR
// type per DDS type name, writers and readers with listeners, write parameters (the related
// sample identity of rmw_fastrtps's service mapping) and the sample identities of what is
// received. Every listener hands its news to a Rust sink at once (bytes, identities, counts);
// names, CDR, the QoS mapping, both service mappings and the graph are Rust
// (rclev-dds/src/).
//
// Threads: listener callbacks run on Fast DDS's receive and event threads; the Rust sinks
// they call are `Sync` and never block. Entities may be created and deleted from any thread.
//
// Nothing here throws into Fast DDS: every listener body and every TopicDataType method
// catches what it could throw (names from the wire that are not UTF-8, allocation failures)
// and reports it to Rust (`listener_failed`), because an exception on one of Fast DDS's
// threads ends the process. Functions Rust calls may throw: cxx turns that into a Result.
#pragma once

#include <memory>
#include <mutex>
#include <map>
#include <string>

#include "rust/cxx.h"

namespace eprosima {
namespace fastdds {
namespace dds {
class DomainParticipant;
class Publisher;
class Subscriber;
class Topic;
class DataWriter;
class DataReader;
class DomainParticipantListener;
class DataWriterListener;
class DataReaderListener;
}  // namespace dds
}  // namespace fastdds
}  // namespace eprosima

namespace rclev_dds {

struct Guid;
struct SampleIdentity;
struct EndpointQos;
struct ParticipantConfig;
struct ReaderSink;
struct WriterSink;
struct PayloadEncoder;
struct GraphSink;
struct ReaderMode;
class ReaderListener;

// Owns the DomainParticipant and its one Publisher and Subscriber, and the topics its
// endpoints share. Shared by the participant handle and every endpoint, so that the DDS
// participant is deleted only after its last endpoint.
class ParticipantCore;

// The participant handle Rust holds.
class DdsParticipant {
public:
    explicit DdsParticipant(std::shared_ptr<ParticipantCore> core);
    ~DdsParticipant();
    Guid guid() const;
    std::shared_ptr<ParticipantCore> core_;
};

class DdsWriter {
public:
    DdsWriter(std::shared_ptr<ParticipantCore> core, std::string topic,
              eprosima::fastdds::dds::DataWriter* writer,
              std::unique_ptr<eprosima::fastdds::dds::DataWriterListener> listener);
    ~DdsWriter();
    // Writes one sample (CDR with its encapsulation header) and returns its identity.
    SampleIdentity write(rust::Slice<const uint8_t> data, const SampleIdentity& related) const;
    // Writes a sample that `encoder` encodes straight into Fast DDS's payload buffer of
    // `capacity` bytes; throws if it does not fit (the encoder knows) or the write fails.
    SampleIdentity write_encoded(uint32_t capacity, PayloadEncoder& encoder,
                                 const SampleIdentity& related) const;
    Guid guid() const;

private:
    std::shared_ptr<ParticipantCore> core_;
    std::string topic_;
    eprosima::fastdds::dds::DataWriter* writer_;
    std::unique_ptr<eprosima::fastdds::dds::DataWriterListener> listener_;
};

class DdsReader {
public:
    DdsReader(std::shared_ptr<ParticipantCore> core, std::string topic,
              eprosima::fastdds::dds::DataReader* reader,
              std::unique_ptr<ReaderListener> listener);
    ~DdsReader();
    Guid guid() const;
    // Takes up to `max` samples from the reader's history into its sink (a room-limited
    // reader's worker calls this); how many were taken, or `max` when the listener found
    // samples meanwhile that it left to this take (there may be more: take again).
    size_t take(size_t max) const;

private:
    std::shared_ptr<ParticipantCore> core_;
    std::string topic_;
    eprosima::fastdds::dds::DataReader* reader_;
    std::unique_ptr<ReaderListener> listener_;
};

// The Fast DDS version the shim was compiled against ("2.14.5").
rust::String engine_version();

std::unique_ptr<DdsParticipant> create_participant(const ParticipantConfig& config,
                                                   rust::Box<GraphSink> sink);

std::unique_ptr<DdsWriter> create_writer(const DdsParticipant& participant,
                                         rust::Str topic, rust::Str type_name,
                                         const EndpointQos& qos,
                                         rust::Slice<const uint8_t> user_data,
                                         rust::Box<WriterSink> sink);

std::unique_ptr<DdsReader> create_reader(const DdsParticipant& participant,
                                         rust::Str topic, rust::Str type_name,
                                         const EndpointQos& qos,
                                         rust::Slice<const uint8_t> user_data,
                                         const ReaderMode& mode, rust::Box<ReaderSink> sink);

}  // namespace rclev_dds
